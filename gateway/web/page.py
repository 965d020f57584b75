"""GET /: the page for people (gateway/static/: plain HTML, CSS and JavaScript, no build
step). Its files are served by Flask's static route at /static/; neither needs the API key.
`POST /` stays the app's animate route (routes/animate.py)."""

from __future__ import annotations

from flask import Blueprint, Response, current_app, send_from_directory

bp = Blueprint("page", __name__)


@bp.get("/")
def page() -> Response:
    response = send_from_directory(current_app.static_folder, "index.html", max_age=0)
    response.headers["Cache-Control"] = "no-cache"
    return response
