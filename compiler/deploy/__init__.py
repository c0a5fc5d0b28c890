"""Deployments of several models: `deployment` compiles them and plans their
residency, `manifest` is the one reader and writer of a deployment's
manifest.json, and `serving` simulates serving a request trace on one.
"""
