"""Tools people run beside the service, from a checkout: `make run`'s supervisor
(devserver), the load test (loadtest, load_clients) and the request benchmark (bench).
The service never imports them and the wheel does not ship them; they need the `loadtest`
extra (psutil, matplotlib)."""
