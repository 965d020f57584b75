"""The gateway's Flask application factory: `create_app(config)` wires services, routes,
request hooks and error handlers; each of those lives in its own module.

The blueprints, one per area (gateway/web/): drawings (POST /animate, POST /, POST
/annotate), jobs (POST /jobs, GET /jobs/<id>), health (/health, /ready, /metrics), motions, files, page (GET /) and openapi
(GET /openapi.json). They reach the worker's services through
`gateway.services.current_services()`.

gunicorn loads `gateway.app:create_app()` in each worker (after gevent has patched the
process) and `gunicorn.conf.py` starts and stops the worker's services around its life.
"""

from __future__ import annotations

from flask import Flask

from gateway.config import Config
from gateway.ops.logs import configure_logging
from gateway.ops.request_log import register_request_hooks
from gateway.services import Services, install
from gateway.web import drawings, files, health, jobs, motions, openapi, page
from gateway.web.error_handlers import register_error_handlers
from gateway.web.security import register_security_headers
from gateway.web.upload import body_limit

BLUEPRINTS = (drawings.bp, jobs.bp, health.bp, motions.bp, files.bp, page.bp, openapi.bp)


def create_app(config: Config | None = None) -> Flask:
    """The WSGI app. Cheap: no process, connection or file is opened until it is used."""
    config = config or Config.from_env()
    configure_logging(config.log_level)
    app = Flask("gateway")
    # Werkzeug refuses bodies past this (declared or streamed) before reading them.
    app.config["MAX_CONTENT_LENGTH"] = body_limit("", config.max_upload_bytes)
    app.json.sort_keys = False
    install(app, Services.build(config))
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
    register_request_hooks(app)
    register_error_handlers(app)
    register_security_headers(app, config)
    return app
