"""Scenes: meshes and instances as numpy structure-of-arrays."""
