"""Jacobians of the Punyo models against two independent routes: torch autograd of
``predict_torch`` and central finite differences of ``predict``, on random states
(random body pose, two contact pairs, mixed per-vertex / barycentric contacts with
repeated vertices), in float32 and float64.  Also: sparse == dense, and the model is
affine in the forces: ``J f = predict(f) − predict(0)``.
"""
import numpy as np
import pytest
import torch
import trimesh

from vsf_sensor_ros.sensor import ContactState, PunyoDenseForceSensor, PunyoPressureSensor, SimState

TOL = {torch.float32: dict(rtol=2e-5, atol=2e-5), torch.float64: dict(rtol=1e-10, atol=1e-10)}


def random_rotation(rng):
    q, r = np.linalg.qr(rng.standard_normal((3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def make_mesh(rng):
    sphere = trimesh.creation.icosphere(subdivisions=2, radius=0.05)
    V = sphere.vertices * (1.0 + 0.05 * rng.random((len(sphere.vertices), 1)))
    return trimesh.Trimesh(V, sphere.faces, process=False)


class Scenario:
    """A random pose and contact set; ``state(forces)`` rebuilds the SimState around given forces."""

    def __init__(self, seed, dtype, n=(5, 4)):
        rng = np.random.default_rng(seed)
        self.mesh = make_mesh(rng)
        T = np.eye(4)
        T[:3, :3] = random_rotation(rng)
        T[:3, 3] = rng.uniform(-1, 1, 3)
        self.T = torch.tensor(T, dtype=dtype)
        self.dtype = dtype
        N = sum(n)
        # interior points of random faces pushed slightly outwards, to the world frame
        faces = rng.integers(0, len(self.mesh.faces), N)
        bary = rng.uniform(0.1, 0.8, (N, 3))
        bary /= bary.sum(1, keepdims=True)
        local = np.einsum("nj,njk->nk", bary, self.mesh.triangles[faces]) \
            + 1e-3 * self.mesh.face_normals[faces]
        self.points = torch.tensor(local @ T[:3, :3].T + T[:3, 3], dtype=dtype)
        self.forces = torch.tensor(rng.standard_normal((N, 3)), dtype=dtype)
        elems = np.full(N, -1)
        elems[[1, 3, 6]] = [7, 7, 20]                     # per-vertex, vertex 7 twice
        self.elems = torch.tensor(elems)
        self.split = n[0]

    def state(self, forces=None, T=None, points=None):
        f = self.forces if forces is None else forces
        p = self.points if points is None else points
        k = self.split
        eye = torch.eye(4, dtype=self.dtype)
        return SimState({"punyo": self.T if T is None else T, "a": eye, "b": eye}, {}, {
            ("punyo", "a"): ContactState(p[:k], f[:k], self.elems[:k]),
            ("b", "punyo"): ContactState(p[:2], f[:2]),          # reverse pair: not on the sensor
            ("punyo", "b"): ContactState(p[k:], f[k:], self.elems[k:])})

    def sensors(self):
        d = PunyoDenseForceSensor("force", "punyo")
        d.attach(self.mesh)
        p = PunyoPressureSensor("pressure", "punyo", base_normal_local=[0.3, -0.2, 0.9])
        p.attach(self.mesh)
        return d, p


CASES = [(seed, dt, which) for seed in (0, 1) for dt in (torch.float32, torch.float64) for which in (0, 1)]


@pytest.mark.parametrize("seed, dtype, which", CASES)
def test_dense_jacobian_equals_autograd_of_predict_torch(seed, dtype, which):
    sc = Scenario(seed, dtype)
    sensor = sc.sensors()[which]
    J_auto = torch.autograd.functional.jacobian(lambda f: sensor.predict_torch(sc.state(forces=f)),
                                                sc.forces)
    blocks = sensor.measurement_force_jacobian(sc.state())
    J_dense = torch.cat([blocks[("punyo", "a")], blocks[("punyo", "b")]], dim=1)
    assert J_dense.dtype == dtype
    torch.testing.assert_close(J_dense, J_auto, **TOL[dtype])


@pytest.mark.parametrize("seed, dtype, which", CASES)
def test_dense_jacobian_equals_finite_differences_of_predict(seed, dtype, which):
    sc = Scenario(seed, dtype)
    sensor = sc.sensors()[which]
    J = sensor.sparse_force_jacobian(sc.state()).to_dense()           # (m, 3N)
    h = 0.5                                                           # the model is affine in f
    fd = torch.zeros_like(J)
    for col in range(J.shape[1]):
        e = torch.zeros_like(sc.forces).reshape(-1)
        e[col] = h
        e = e.reshape(sc.forces.shape)
        fd[:, col] = (sensor.predict(sc.state(forces=sc.forces + e))
                      - sensor.predict(sc.state(forces=sc.forces - e))) / (2 * h)
    torch.testing.assert_close(J, fd, **TOL[dtype])


@pytest.mark.parametrize("seed, dtype, which", CASES)
def test_sparse_equals_dense_and_j_times_f_is_the_force_dependent_part(seed, dtype, which):
    sc = Scenario(seed, dtype)
    sensor = sc.sensors()[which]
    m = len(sensor.measurement_names())
    sensor.set_calibration({"tare": np.linspace(-1.0, 1.0, m)})       # a force-independent part
    st = sc.state()
    S = sensor.sparse_force_jacobian(st)
    dense = sensor.measurement_force_jacobian(st)
    assert S.pairs == [("punyo", "a"), ("punyo", "b")] and S.offsets == [0, 5, 9]
    for pair, block in S.to_pair_dict().items():
        torch.testing.assert_close(block, dense[pair])
    f = sc.forces.reshape(-1)
    free = sensor.predict(sc.state(forces=torch.zeros_like(sc.forces)))
    torch.testing.assert_close(S.to_dense() @ f, sensor.predict(st) - free, **TOL[dtype])


def test_sparse_entry_counts_per_mode():
    sc = Scenario(3, torch.float64)
    dense_sensor, pressure_sensor = sc.sensors()
    # 3 per-vertex contacts (9 entries each) + 6 barycentric (27 each)
    assert len(dense_sensor.sparse_force_jacobian(sc.state()).values) == 3 * 9 + 6 * 27
    assert len(pressure_sensor.sparse_force_jacobian(sc.state()).values) == 9 * 3


@pytest.mark.parametrize("which", [0, 1])
def test_gradient_with_respect_to_the_body_transform_matches_finite_differences(which):
    sc = Scenario(5, torch.float64)
    sensor = sc.sensors()[which]
    J_auto = torch.autograd.functional.jacobian(lambda T: sensor.predict_torch(sc.state(T=T)), sc.T)
    h = 1e-6
    fd = torch.zeros_like(J_auto)
    for i in range(3):
        for j in range(4):
            E = torch.zeros(4, 4, dtype=torch.float64)
            E[i, j] = h
            plus, minus = sensor.predict(sc.state(T=sc.T + E)), sensor.predict(sc.state(T=sc.T - E))
            fd[:, i, j] = (plus - minus) / (2 * h)
    # (the dense model's translation columns are non-zero only through the barycentric weights)
    torch.testing.assert_close(J_auto[:, :3, :], fd[:, :3, :], rtol=1e-5, atol=1e-6)


def test_predict_and_predict_torch_agree():
    for dtype in (torch.float32, torch.float64):
        sc = Scenario(9, dtype)
        for sensor in sc.sensors():
            fast, slow = sensor.predict(sc.state()), sensor.predict_torch(sc.state()).detach()
            torch.testing.assert_close(fast, slow, **TOL[dtype])
