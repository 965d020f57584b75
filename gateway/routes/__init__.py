"""The gateway's blueprints, one per area: animate, health (+ready, metrics), motions, files.

Routes reach the worker's services through `gateway.services.current_services()`.
"""

from gateway.routes import animate, files, health, motions

BLUEPRINTS = (animate.bp, health.bp, motions.bp, files.bp)
