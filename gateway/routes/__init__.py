"""The gateway's blueprints, one per area: animate, health (+ready, metrics), motions, files."""
