"""The HTTP gateway: a drawing in, one animation URL per motion out (README, "HTTP API").

Where to start reading:
- `app.create_app` wires everything; `config.py` holds every setting, `services.py` what a
  worker process shares (and how a route reaches it), `errors.py` the API's errors.
- A request (docs/ARCHITECTURE.md follows one from the route to the stored file):
  `web/drawings.py` (the routes that take a drawing) -> `web/requests.py` (the typed
  request) -> `rendering/pipeline.py` (storage lookup, a render slot, the figure, the
  renders, the upload) -> `rendering/figures.py` (the models over HTTP, the mask) ->
  `rendering/tasks.py` (the CPU work, in the render worker processes) ->
  `backends/storage.py`.

The rooms:
- `web/`: the HTTP surface - routes, request parsing, error handlers, OpenAPI, the page's
  route (its files are in `static/`), security headers;
- `admission.py`: admission and overload, in one module;
- `rendering/`: the pipeline, the figure stage, the render pool and its tasks, the motions;
- `backends/`: TorchServe's client, storage, the model table;
- `ops/`: logs, metrics, readiness, the request log, the gunicorn worker;
- `tools/`: what people run beside the service (`make run`'s supervisor, the load test, the
  request benchmark): never imported by the service, not in the wheel.
`gunicorn.conf.py` runs it all (`python -m gateway`).
"""
