"""The gateway's blueprints, one per area: animate, annotate, health (+ready, metrics),
motions, files, page (GET /), openapi (GET /openapi.json).

Routes reach the worker's services through `gateway.services.current_services()`.
"""

from gateway.routes import animate, annotate, files, health, motions, openapi, page

BLUEPRINTS = (animate.bp, annotate.bp, health.bp, motions.bp, files.bp, page.bp, openapi.bp)
