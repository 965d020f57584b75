"""The HTTP gateway: a drawing in, one GIF URL per motion out (see README, "HTTP API").

Where to start reading: `app.create_app` (wiring) -> `routes/animate.py` (admission order:
key, full house, body, options, storage, slot) -> `pipeline.py` (the stages) ->
`cpu_pool.py` / `cpu_tasks.py` (CPU work off the gevent hub). `services.py` holds what a
worker shares and how a route reaches it; settings live in `config.py` only;
`gunicorn.conf.py` runs it; `bench.py` measures a running one.
"""
