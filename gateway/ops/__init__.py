"""Running the gateway: JSON logs, Prometheus metrics, readiness, the request log and stage
timer, and the gunicorn worker that refuses a full house before Flask (with the kernel's
arrival stamps it times refusals by)."""
