"""What the gateway talks to: TorchServe over HTTP (torchserve_client), where the models are
served (model_table), and where the animations are stored (storage: a folder or S3)."""
