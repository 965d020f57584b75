"""Pure animation library: character rig, mesh and body parts, BVH, retargeting, rasterising, GIF.

No server, network, Flask, boto3 or torch in here: numpy, scipy, OpenCV, Pillow and
PyYAML only, so a notebook or a batch job can use it on its own.
"""
