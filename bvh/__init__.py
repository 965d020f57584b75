"""The motions the project ships: BVH files and their table, `motions.yaml`.

Installed as `animation.shipped_motions` (see setup.py), where `animation.motions` finds
them through importlib.resources, in the checkout and in an installed wheel alike.
"""
