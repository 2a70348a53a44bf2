"""Local lights: the light set (``model``), its GPU buffers and cluster grid (``gpu``), the
numpy twins of the assignment and the shading (``reference``). The procedural city's lights
are ``engine.scene.city_lights``; the passes are ``engine.passes.lights``."""
