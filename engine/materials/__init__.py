"""Materials: the glTF metallic-roughness model, images, texture arrays and the GPU tables."""
