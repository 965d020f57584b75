"""Jobs: long work on a queue (README, "Jobs"). `records.py` (a job's record and its
request), `queue.py` (Redis Streams, or one embedded in the process), `runner.py` (a job's
life, shared by `python -m gateway.worker` and the embedded queue), `callbacks.py`."""
