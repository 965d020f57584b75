"""The HTTP gateway: a drawing in, one GIF URL per motion out (see README, "HTTP API").

Where to start reading: `app.create_app` (wiring) -> `routes/animate.py` -> `pipeline.py`
(the stages) -> `cpu_pool.py` / `cpu_tasks.py` (CPU work off the gevent hub). Settings live
in `config.py` only; `gunicorn.conf.py` runs it; `bench.py` measures a running one.
"""
