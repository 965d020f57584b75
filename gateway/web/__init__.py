"""The HTTP surface: the routes (one blueprint per area: drawings, health, motions, files,
page, openapi), reading a request (upload -> options -> requests), the error handlers and
the security headers. Routes reach the worker's services through
`gateway.services.current_services()`; app.py registers the blueprints."""
