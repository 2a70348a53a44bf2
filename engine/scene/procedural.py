"""A procedural city: the default scene of the culling samples.

Layout: square blocks (``BLOCK`` m incl. a raised sidewalk) separated by streets, placed ring by
ring around the origin so the city grows in area with the instance count and density stays the
same. Every block has the same ``SLOTS_PER_BLOCK`` instance slots (sidewalk slab, six buildings
on randomly split lots, a roof element per building, eight trees of trunk + crown along the
curbs, two lamp posts), so generation is a handful of vectorised numpy operations and
``city(N)`` is exactly ``N`` instances: the ground, then whole blocks, the last one truncated.

Blocks are generated in a fixed order with one row of random numbers each, so a smaller city is
a prefix of a larger one with the same seed (only the ground slab differs in size).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from engine.materials.model import DEFAULT_MATERIAL
from engine.scene import city_materials as cm
from engine.scene.camera import CameraPath, WaypointPath
from engine.scene.meshes import box, cone_lods, cylinder_lods, pyramid, sphere_lods
from engine.scene.scene import Mesh, Scene

BLOCK = 40.0  # m, block side including the sidewalk
STREET = 14.0  # m, street width between blocks
PITCH = BLOCK + STREET
SIDEWALK = 3.0  # m, sidewalk band inside the block edge
CURB_HEIGHT = 0.3  # m, top of the sidewalk slab
BUILDINGS = 6  # per block: 2 columns x 3 rows of lots
TREES = 8  # per block: 2 per edge
LAMPS = 2  # per block: diagonally opposite corners
SLOTS_PER_BLOCK = 1 + 2 * BUILDINGS + 2 * TREES + 2 * LAMPS  # 33
MAX_HEIGHT = 160.0  # m
SUN = (0.55, 0.62, 0.36)  # towards the sun: ~40 degrees up, long shadows across streets

MESH_BOX, MESH_PYRAMID, MESH_CYLINDER, MESH_CONE, MESH_SPHERE = range(5)

# sRGB palettes, converted to linear below.
FACADES = np.array(
    [[0.76, 0.74, 0.70], [0.64, 0.33, 0.26], [0.86, 0.78, 0.62], [0.90, 0.90, 0.87],
     [0.38, 0.50, 0.62], [0.28, 0.32, 0.37], [0.80, 0.52, 0.37], [0.62, 0.72, 0.62],
     [0.70, 0.62, 0.55], [0.55, 0.56, 0.60]]
)  # fmt: skip
ROOF_TILES = np.array([[0.55, 0.22, 0.18], [0.35, 0.35, 0.38], [0.45, 0.30, 0.22]])
GREENS = np.array([[0.22, 0.45, 0.20], [0.30, 0.52, 0.22], [0.16, 0.36, 0.20], [0.40, 0.55, 0.25]])
ASPHALT, SIDEWALK_GREY = (0.20, 0.20, 0.22), (0.62, 0.61, 0.58)
BARK, TANK_WOOD = (0.36, 0.25, 0.17), (0.45, 0.33, 0.22)
POST_GREY, LAMP_GLOW = (0.25, 0.25, 0.25), (1.0, 0.85, 0.45)


def city_meshes() -> list[Mesh]:
    """The city's meshes, indexed by the ``MESH_*`` constants (all fit the unit cube)."""
    return [
        Mesh.from_lods("box", [box()]),
        Mesh.from_lods("pyramid", [pyramid()]),
        Mesh.from_lods("cylinder", cylinder_lods()),
        Mesh.from_lods("cone", cone_lods()),
        Mesh.from_lods("sphere", sphere_lods()),
    ]


def city(instances: int, *, seed: int = 0, materials: bool = True) -> tuple[Scene, CameraPath]:
    """Generate a city of exactly ``instances`` instances and a street-level fly-through.

    Args:
        instances: total instance count N >= 1 (1 is the ground alone).
        seed: random seed; the same (instances, seed) always gives the same scene.
        materials: the city's textured materials (MASK foliage, BLEND glass, ...); False:
            every instance the default opaque material tinted by its colour (the city before
            materials, which benchmarks keep comparable with older figures). In both the
            ground slab casts no shadow (``Material.casts_shadows``): it lies under
            everything, so the shadow map is the same without its fill.
    Returns:
        ``(scene, path)``: the scene (metres, +Y up, ground top at y = 0) and a camera path
        that drives around the downtown blocks at 5 m eye height, looking along the street.
    Raises:
        ValueError: ``instances`` < 1.
    """
    if int(instances) != instances or instances < 1:
        raise ValueError(f"instances must be an integer >= 1, got {instances!r}")
    n_blocks = -(-(instances - 1) // SLOTS_PER_BLOCK)
    cells = block_cells(n_blocks)
    rng = np.random.default_rng(seed)
    rand = rng.random((n_blocks, 96))  # fixed width per block: prefix-stable across sizes
    centers = cells * PITCH

    slots = np.zeros((n_blocks, SLOTS_PER_BLOCK, 4, 4), np.float32)
    slots[..., 3, 3] = 1.0
    ids = np.zeros((n_blocks, SLOTS_PER_BLOCK), np.uint32)
    colors = np.ones((n_blocks, SLOTS_PER_BLOCK, 4), np.float32)
    mats = np.zeros((n_blocks, SLOTS_PER_BLOCK), np.uint32)
    _sidewalks(centers, slots[:, 0], colors[:, 0])
    mats[:, 0] = cm.PAVING
    b = slice(1, 1 + BUILDINGS)
    r = slice(1 + BUILDINGS, 1 + 2 * BUILDINGS)
    t = slice(1 + 2 * BUILDINGS, 1 + 2 * BUILDINGS + 2 * TREES)
    lamp = slice(1 + 2 * BUILDINGS + 2 * TREES, SLOTS_PER_BLOCK)
    _buildings(centers, rand[:, :41], slots[:, b], colors[:, b], slots[:, r], ids[:, r],
               colors[:, r])  # fmt: skip
    _trees(centers, rand[:, 41:81], slots[:, t], ids[:, t], colors[:, t])
    _lamps(centers, rand[:, 81:83], slots[:, lamp], ids[:, lamp], colors[:, lamp])
    heights = slots[:, b, 1, 1]
    mats[:, b] = np.where(heights < 14.0, cm.BRICK, cm.FACADE)
    roof_h = slots[:, r, 1, 1]
    mats[:, r] = np.where(roof_h == 3.5, cm.GLASS, cm.ROOF)  # penthouses: 3.5 m glass boxes
    mats[:, t] = np.tile([cm.BARK, cm.FOLIAGE], TREES)
    mats[:, lamp] = np.tile([cm.METAL, cm.LAMP], LAMPS)

    count = instances - 1
    transforms = np.concatenate([_ground(centers)[None], slots.reshape(-1, 4, 4)[:count]])
    mesh_ids = np.concatenate([[MESH_BOX], ids.reshape(-1)[:count]]).astype(np.uint32)
    cols = np.concatenate([[(*_linear(ASPHALT), 1.0)], colors.reshape(-1, 4)[:count]])
    material_ids = np.concatenate([[cm.ASPHALT], mats.reshape(-1)[:count]]).astype(np.uint32)
    if not materials:  # the default material; the ground's copy casts no shadow, as asphalt
        flat = [DEFAULT_MATERIAL, replace(DEFAULT_MATERIAL, name="ground", casts_shadows=False)]
        ground = (np.arange(instances) == 0).astype(np.uint32)
        scene = Scene(city_meshes(), transforms, mesh_ids, cols, sun_direction=SUN,
                      materials=flat, material_ids=ground)  # fmt: skip
        return scene, street_loop(n_blocks)
    mats_, images = cm.city_materials()
    scene = Scene(city_meshes(), transforms, mesh_ids, cols, sun_direction=SUN,
                  materials=mats_, material_ids=material_ids, images=images)  # fmt: skip
    return scene, street_loop(n_blocks)


def block_cells(n_blocks: int) -> np.ndarray:
    """Integer grid cells ``(n_blocks, 2)`` of the first blocks in generation order: square
    rings around (0, 0), each ring in a fixed order, so the order never depends on the count."""
    if n_blocks == 0:
        return np.zeros((0, 2), np.int64)
    ring = int(np.ceil((np.sqrt(n_blocks) - 1) / 2))
    r = np.arange(-ring, ring + 1)
    i, j = np.meshgrid(r, r, indexing="ij")
    i, j = i.ravel(), j.ravel()
    cheb = np.maximum(np.abs(i), np.abs(j))
    angle = np.arctan2(j, i)
    order = np.lexsort((angle, cheb))  # by ring, then angle within the ring
    return np.stack([i[order], j[order]], axis=1)[:n_blocks]


def street_loop(n_blocks: int) -> CameraPath:
    """A closed rectangle of streets around the central (2m+1)² blocks (m <= 3), driven at
    14 m/s with the eye 5 m above the street, looking 40 m ahead and slightly down."""
    full_rings = int((np.sqrt(max(n_blocks, 1)) - 1) // 2)  # rings completely built
    m = min(max(full_rings - 1, 0), 3)
    s = (m + 0.5) * PITCH  # street centre line
    eye_y = 5.0
    corners = np.array([[-s, eye_y, s], [s, eye_y, s], [s, eye_y, -s], [-s, eye_y, -s]])
    return WaypointPath(
        corners, speed=14.0, look_ahead=40.0, target_drop=1.5, start=0.3 * s, fov_y_deg=60.0
    )


# -- slot fillers (all vectorised over blocks) ------------------------------------------------


def _linear(srgb) -> np.ndarray:
    return np.power(np.asarray(srgb, np.float64), 2.2)


def _place(m: np.ndarray, pos: np.ndarray, size: np.ndarray) -> None:
    """Write translate(pos) @ scale(size) into ``m`` (..., 4, 4); the mesh spans the unit cube."""
    m[..., 0, 0], m[..., 1, 1], m[..., 2, 2] = size[..., 0], size[..., 1], size[..., 2]
    m[..., :3, 3] = pos


def _ground(centers: np.ndarray) -> np.ndarray:
    span = 2.0 * (np.abs(centers).max(initial=0.0) + PITCH)
    m = np.identity(4, np.float32)
    _place(m, np.array([0.0, -0.25, 0.0]), np.array([span, 0.5, span]))
    return m


def _sidewalks(centers, m, col) -> None:
    n = len(centers)
    pos = np.stack([centers[:, 0], np.full(n, CURB_HEIGHT / 2), centers[:, 1]], 1)
    _place(m, pos, np.tile([BLOCK, CURB_HEIGHT, BLOCK], (n, 1)))
    col[:, :3] = _linear(SIDEWALK_GREY)


def _buildings(centers, rnd, m, col, roof_m, roof_ids, roof_col) -> None:
    """Six lots per block (x split in two columns, each column cut in three), one building per
    lot, taller downtown, and a roof element each: hip roof, parapet slab, penthouse or tank."""
    n = len(centers)
    inner = BLOCK - 2 * SIDEWALK
    x_cut = 0.35 + 0.3 * rnd[:, 0]
    z_cuts = np.stack([0.22 + 0.2 * rnd[:, 1:3], 0.58 + 0.2 * rnd[:, 3:5]], axis=2)  # (n,2,2)
    x_edges = np.stack([np.zeros(n), x_cut, np.ones(n)], 1)  # (n, 3)
    z_edges = np.concatenate([np.zeros((n, 2, 1)), z_cuts, np.ones((n, 2, 1))], 2)  # (n,2,4)
    col_i = np.repeat([0, 1], 3)  # lot -> column
    row_i = np.tile([0, 1, 2], 2)
    x0, x1 = x_edges[:, col_i], x_edges[:, col_i + 1]  # (n, 6) fractions
    z0, z1 = z_edges[:, col_i, row_i], z_edges[:, col_i, row_i + 1]
    gap = 0.6 + 1.4 * rnd[:, 5:11]  # m between neighbours
    w = np.maximum((x1 - x0) * inner - gap, 3.0)
    d = np.maximum((z1 - z0) * inner - gap, 3.0)
    cx = centers[:, :1] - inner / 2 + (x0 + x1) / 2 * inner
    cz = centers[:, 1:2] - inner / 2 + (z0 + z1) / 2 * inner

    dist = np.linalg.norm(centers, axis=1, keepdims=True)
    downtown = 1.0 + 6.0 * np.exp(-((dist / 170.0) ** 2))
    base = np.exp(np.log(9.0) + 0.5 * _normal(rnd[:, 11:17], rnd[:, 17:23]))
    h = np.clip(np.clip(base, 4.0, 30.0) * downtown, 4.0, MAX_HEIGHT)
    y0 = CURB_HEIGHT
    _place(m, np.stack([cx, y0 + h / 2, cz], -1), np.stack([w, h, d], -1))
    shade = 0.88 + 0.24 * rnd[:, 23:29, None]
    facade = _linear(FACADES)[(rnd[:, 29:35] * len(FACADES)).astype(int)] * shade
    col[..., :3] = facade

    # Roofs: low buildings mostly get hip roofs; tall ones parapets, penthouses or water tanks.
    pick = rnd[:, 35:41]
    top = y0 + h
    low = h < 14.0
    hip = low & (pick < 0.7)
    pent = ~low & (pick < 0.35)
    tank = ~low & (pick >= 0.35) & (pick < 0.6)
    slab = ~(hip | pent | tank)
    size = np.stack([w + 0.5, np.full_like(w, 0.8), d + 0.5], -1)  # parapet slab
    pos = np.stack([cx, top + 0.4, cz], -1)
    roof_h = 0.45 * np.minimum(w, d)
    size[hip] = np.stack([w, roof_h, d], -1)[hip]
    pos[hip] = np.stack([cx, top + roof_h / 2, cz], -1)[hip]
    size[pent] = np.stack([0.5 * w, np.full_like(w, 3.5), 0.5 * d], -1)[pent]
    pos[pent] = np.stack([cx + 0.15 * w, top + 1.75, cz - 0.15 * d], -1)[pent]
    size[tank] = np.tile([3.0, 4.0, 3.0], (*w.shape, 1))[tank]
    pos[tank] = np.stack([cx - 0.25 * w, top + 2.0, cz + 0.25 * d], -1)[tank]
    _place(roof_m, pos, size)
    roof_ids[:] = MESH_BOX
    roof_ids[hip] = MESH_PYRAMID
    roof_ids[tank] = MESH_CYLINDER
    tile = _linear(ROOF_TILES)[(shade[..., 0] * 10).astype(int) % len(ROOF_TILES)]
    roof_col[..., :3] = facade * 0.7
    roof_col[slab, :3] = facade[slab] * 0.8
    roof_col[hip, :3] = tile[hip]
    roof_col[tank, :3] = _linear(TANK_WOOD)


def _trees(centers, rnd, m, ids, col) -> None:
    """Two trees per block edge at the curb: a cylinder trunk and a crown, either a cone
    (conifer) or a sphere (broadleaf); slots alternate trunk, crown."""
    edge = np.repeat(np.arange(4), 2)  # 8 trees: 2 per edge
    along = np.tile([-0.5, 0.5], 4) * BLOCK * 0.5 + (rnd[:, :8] - 0.5) * 6.0  # m along edge
    out = BLOCK / 2 - 1.2  # m from block centre to the tree line (on the curb)
    normal = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]], np.float64)[edge]  # (8, 2)
    tangent = normal[:, ::-1] * np.array([-1.0, 1.0])
    xz = centers[:, None, :] + normal * out + tangent * along[..., None]  # (n, 8, 2)
    scale = 0.8 + 0.45 * rnd[:, 8:16]
    conifer = rnd[:, 16:24] < 0.4
    trunk_h = 2.6 * scale
    trunk = np.stack([xz[..., 0], CURB_HEIGHT + trunk_h / 2, xz[..., 1]], -1)
    _place(m[:, 0::2], trunk, np.stack([0.35 * scale, trunk_h, 0.35 * scale], -1))
    crown_h = np.where(conifer, 6.0, 3.4) * scale
    crown_w = np.where(conifer, 2.8, 3.4) * scale
    crown_y = CURB_HEIGHT + np.where(conifer, 1.4 * scale, trunk_h) + crown_h / 2
    crown = np.stack([xz[..., 0], crown_y, xz[..., 1]], -1)
    _place(m[:, 1::2], crown, np.stack([crown_w, crown_h, crown_w], -1))
    ids[:, 0::2] = MESH_CYLINDER
    ids[:, 1::2] = np.where(conifer, MESH_CONE, MESH_SPHERE)
    col[:, 0::2, :3] = _linear(BARK)
    green = _linear(GREENS)[(rnd[:, 24:32] * len(GREENS)).astype(int)]
    col[:, 1::2, :3] = green * (0.85 + 0.3 * rnd[:, 32:40, None])


def _lamps(centers, rnd, m, ids, col) -> None:
    """Two lamp posts per block near opposite corners: a thin cylinder and a glowing head."""
    corner = np.array([[1.0, 1.0], [-1.0, -1.0]]) * (BLOCK / 2 - 0.8)
    shift = np.array([[-6.0, 0.0], [6.0, 0.0]])
    xz = centers[:, None, :] + corner + shift * (0.6 + 0.8 * rnd[:, :2, None])  # (n, 2, 2)
    height = 6.0
    post = np.stack([xz[..., 0], np.full(xz.shape[:2], CURB_HEIGHT + height / 2), xz[..., 1]], -1)
    _place(m[:, 0::2], post, np.broadcast_to([0.22, height, 0.22], post.shape))
    head = post.copy()
    head[..., 1] = CURB_HEIGHT + height + 0.3
    _place(m[:, 1::2], head, np.broadcast_to([0.8, 0.6, 0.8], head.shape))
    ids[:, 0::2] = MESH_CYLINDER
    ids[:, 1::2] = MESH_SPHERE
    col[:, 0::2, :3] = _linear(POST_GREY)
    col[:, 1::2, :3] = _linear(LAMP_GLOW)


def _normal(u1: np.ndarray, u2: np.ndarray) -> np.ndarray:
    """Standard normal samples from two uniform arrays (Box–Muller)."""
    return np.sqrt(-2.0 * np.log(np.maximum(u1, 1e-12))) * np.cos(2.0 * np.pi * u2)
