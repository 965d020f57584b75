"""The gateway's Flask application factory: `create_app(config)` wires services, routes,
request hooks and error handlers; each of those lives in its own module.

gunicorn loads `gateway.app:create_app()` in each worker (after gevent has patched the
process) and `gunicorn.conf.py` starts and stops the worker's services around its life.
"""

from __future__ import annotations

from flask import Flask

from gateway.body import body_limit
from gateway.config import Config
from gateway.error_handlers import register_error_handlers
from gateway.headers import register_security_headers
from gateway.logs import configure_logging
from gateway.request_log import register_request_hooks
from gateway.routes import BLUEPRINTS
from gateway.services import Services, install


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
