"""TorchServe handlers: one module per served model, sharing `base` and `images`."""
