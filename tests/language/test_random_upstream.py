"""tritone's `tl.rand`, `tl.randn`, `tl.randint` and `tl.randint4x` against
values recorded once from upstream Triton 3.6's interpreter.

Seeds 0, 12345, -7 and 2**40 + 5 (kernel arguments: i32, i32, i32, i64);
offsets loaded from int32 and int64 tensors, negative ones and ones above 2**32
included. `rand`, `randint` and `randint4x` must match bit for bit (they are
integer Philox rounds, one int -> float conversion and one multiply, identical
on upstream's GPU and interpreter); `randn` within 2 ulp (the GPU's sqrt and
log are approximate, TRITON_SEMANTICS 8.3 and section 12).

How the numbers were made (the kernel is tests/kernels/_random.py):

    cd <repo> && python -m tests.language.test_random_upstream --record

which runs that kernel on upstream Triton 3.6.0 under TRITON_INTERPRET=1
(numpy 2.4.6, torch 2.13 CPU) and prints REFERENCE below.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from tests.kernels._data import assert_close, assert_equal
from tests.kernels._loader import HERE as KERNELS_DIR
from tests.kernels._loader import implementation_under_test, load_kernels, use_upstream_interpreter

RANDOM_KERNELS = KERNELS_DIR / "_random.py"
SEEDS = (0, 12345, -7, 2**40 + 5)
OFFSETS = {
    "int32": [0, 1, 2, 3, -1, -5, 2**31 - 1, -(2**31)],
    "int64": [0, 1, -1, 2**32, 2**32 + 7, -(2**33) - 3, 2**40, 2**62 + 11],
}


def _offsets(kind: str) -> torch.Tensor:
    return torch.tensor(OFFSETS[kind], dtype=getattr(torch, kind))


def record() -> dict:
    """Run the kernel on upstream's interpreter for every (seed, offsets) pair."""
    use_upstream_interpreter()
    import triton
    import triton.language as tl

    module = load_kernels(triton, tl, RANDOM_KERNELS)
    table = {}
    for seed in SEEDS:
        for kind in OFFSETS:
            out = module.run_random(seed, _offsets(kind))
            table[(seed, kind)] = {
                "rand": [float(np.float32(v)) for v in out["rand"].numpy()],
                "randn": [float(np.float32(v)) for v in out["randn"].numpy()],
                "randint": out["randint"].tolist(),
                "randint4x": out["randint4x"].tolist(),
            }
    return table


def _format(table: dict) -> str:
    lines = ["REFERENCE = {"]
    for (seed, kind), values in table.items():
        lines.append(f"    ({seed}, {kind!r}): {{")
        for name in ("rand", "randn"):
            floats = ", ".join(str(np.float32(v)) for v in values[name])
            lines.append(f"        {name!r}: [{floats}],")
        lines.append(f"        'randint': {values['randint']},")
        lines.append("        'randint4x': [")
        for row in values["randint4x"]:
            lines.append(f"            {row},")
        lines.append("        ],")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines)


REFERENCE = {
    (0, 'int32'): {
        'rand': [0.7980929, 0.05551759, 0.03889884, 0.42526442, 0.4555041, 0.07156783, 0.7476801, 0.50304186],
        'randn': [0.04655153, -0.38836142, -1.637952, 0.6315315, -1.2274312, -1.3803741, -0.7625606, -1.1572407],
        'randint': [1713891541, 4175744164, 83534633, 3381718825, 3316779677, 4141276520, 1605630974, 3214693019],
        'randint4x': [
            [1713891541, 3781805453, 3159862348, 2600524760],
            [4175744164, 1555169499, 2980410603, 159317863],
            [83534633, 1372009126, 605361069, 1167144420],
            [3381718825, 1782871206, 2596868943, 1832992260],
            [3316779677, 1144319054, 297526523, 706672549],
            [4141276520, 757261493, 1297998493, 3380862231],
            [1605630974, 3217710806, 1456034292, 1606796202],
            [3214693019, 3166478559, 1813972072, 714425551],
        ],
    },
    (0, 'int64'): {
        'rand': [0.7980929, 0.05551759, 0.095262006, 0.8344962, 0.7476759, 0.6776304, 0.24139045, 0.8439966],
        'randn': [0.04655153, -0.38836142, -0.029273713, 0.2871584, 0.5850358, 0.2666681, 1.6785276, 0.5132317],
        'randint': [1713891541, 4175744164, 4090393677, 1792067052, 1605621865, 1455200327, 518382088, 2482498349],
        'randint4x': [
            [1713891541, 3781805453, 3159862348, 2600524760],
            [4175744164, 1555169499, 2980410603, 159317863],
            [4090393677, 3753482255, 1518119633, 634470994],
            [1792067052, 3928187465, 1940150773, 122242227],
            [1605621865, 238020220, 2311949275, 625085030],
            [1455200327, 431918450, 2923380913, 1447504583],
            [518382088, 4262723817, 499517212, 1119167254],
            [2482498349, 168291014, 323631986, 3869798737],
        ],
    },
    (12345, 'int32'): {
        'rand': [0.35955063, 0.005566735, 0.84511805, 0.5762219, 0.4176212, 0.40370682, 0.34578633, 0.08285331],
        'randn': [-0.986243, -0.7736671, -0.32186657, 0.38707107, 0.28246263, -1.3465345, -0.9850585, -2.0689187],
        'randint': [3522838145, 11954473, 1814877333, 3057540118, 3398132525, 866953835, 3552396717, 4117041148],
        'randint4x': [
            [3522838145, 796912209, 3536492049, 3811097568],
            [11954473, 619747172, 3835353109, 2774477367],
            [1814877333, 1409597833, 2271240661, 1527686119],
            [3057540118, 2555317768, 3034861507, 1896346616],
            [3398132525, 1684234828, 2077538770, 2938058295],
            [866953835, 1065807464, 3490248735, 2576446806],
            [3552396717, 1356935485, 3684575891, 3826425301],
            [4117041148, 1205165132, 3483314476, 1954747901],
        ],
    },
    (12345, 'int64'): {
        'rand': [0.35955063, 0.005566735, 0.58663845, 0.5311828, 0.7680917, 0.16355725, 0.17597367, 0.43250114],
        'randn': [-0.986243, -0.7736671, -0.69268656, 1.1072264, -0.36049753, -1.2676092, -1.4213961, 0.9973901],
        'randint': [3522838145, 11954473, 3035170659, 1140706576, 1649464423, 351236542, 3917066684, 3366178101],
        'randint4x': [
            [3522838145, 796912209, 3536492049, 3811097568],
            [11954473, 619747172, 3835353109, 2774477367],
            [3035170659, 2935608726, 2705249889, 3295598949],
            [1140706576, 4234378625, 1359849503, 3685485852],
            [1649464423, 714354900, 1673024876, 2695982175],
            [351236542, 1361449869, 3876327326, 3925063162],
            [3917066684, 833261295, 4149187825, 2441417157],
            [3366178101, 4058652619, 3687454129, 829246741],
        ],
    },
    (-7, 'int32'): {
        'rand': [0.21381672, 0.937227, 0.97549886, 0.31656057, 0.6211031, 0.51132387, 0.23956215, 0.98759127],
        'randn': [0.3521541, -0.25351197, 0.039100073, 1.0161556, -0.6224451, 1.1409687, -0.8402552, -0.124221824],
        'randint': [459167936, 2012679833, 2094867916, 3615158609, 2961158371, 3196907570, 3780511453, 2120836234],
        'randint4x': [
            [459167936, 467880407, 4291159228, 708029395],
            [2012679833, 1343657335, 3978528657, 4278950177],
            [2094867916, 476561156, 1441838837, 1113656834],
            [3615158609, 1861535615, 2467544800, 1377838971],
            [2961158371, 3521719162, 1963234747, 3868838615],
            [3196907570, 2088397457, 3072316943, 3211925693],
            [3780511453, 714659790, 2704575705, 731663215],
            [2120836234, 845991482, 1559834777, 346680095],
        ],
    },
    (-7, 'int64'): {
        'rand': [0.21381672, 0.937227, 0.37305894, 0.19601159, 0.81837124, 0.68284357, 0.7659407, 0.30369204],
        'randn': [0.3521541, -0.25351197, -1.3388757, 0.69740695, -0.28717813, 0.69226235, 0.050226144, -1.3941817],
        'randint': [459167936, 2012679833, 3493829221, 3874035591, 1757438949, 2828571787, 2650121971, 3642793527],
        'randint4x': [
            [459167936, 467880407, 4291159228, 708029395],
            [2012679833, 1343657335, 3978528657, 4278950177],
            [3493829221, 3325957944, 2939456188, 43643767],
            [3874035591, 2548794903, 1002128984, 2473939736],
            [1757438949, 3597196010, 2477024581, 3688666791],
            [2828571787, 224159396, 919867691, 1055038450],
            [2650121971, 3781621716, 573526217, 4088770015],
            [3642793527, 922000519, 3014112243, 4031943106],
        ],
    },
    (1099511627781, 'int32'): {
        'rand': [0.7371795, 0.5477975, 0.0238862, 0.64154774, 0.24714656, 0.39253673, 0.31359497, 0.45731416],
        'randn': [-0.11004948, -0.8110887, 2.3934486, 0.45535582, 0.8090882, -0.07839432, 1.4852821, 0.6658665],
        'randint': [1583081134, 1176386292, 51295228, 2917253889, 530743245, 3452001001, 673440144, 3312892548],
        'randint4x': [
            [1583081134, 585196357, 818553392, 183660363],
            [1176386292, 3473732642, 1393987389, 4087645998],
            [51295228, 2319654771, 1818268038, 2407623788],
            [2917253889, 3930494284, 989146628, 3686395457],
            [530743245, 3930735682, 2645113320, 3835315500],
            [3452001001, 3738493285, 1706965735, 2032277156],
            [673440144, 4218816152, 2155019868, 3614237587],
            [3312892548, 1802463364, 2158564654, 985802610],
        ],
    },
    (1099511627781, 'int64'): {
        'rand': [0.7371795, 0.5477975, 0.5828149, 0.84160084, 0.2681156, 0.16348292, 0.9867155, 0.49096814],
        'randn': [-0.11004948, -0.8110887, -0.15696803, -0.014928018, 0.3642391, 0.2775065, -0.08402987, -1.190071],
        'randint': [1583081134, 1176386292, 1251585558, 2487643074, 575773977, 351076913, 2118955531, 1054346124],
        'randint4x': [
            [1583081134, 585196357, 818553392, 183660363],
            [1176386292, 3473732642, 1393987389, 4087645998],
            [1251585558, 588698562, 391890167, 785560271],
            [2487643074, 2693043066, 2196172582, 2306527798],
            [575773977, 459486285, 4062309089, 2744051638],
            [351076913, 1660627244, 1610465092, 1832408106],
            [2118955531, 2868784004, 3139853663, 2348352314],
            [1054346124, 3244314885, 444671011, 123742463],
        ],
    },
}


@pytest.fixture(scope="module")
def kernels():
    impl = implementation_under_test()
    return impl, impl.load(RANDOM_KERNELS)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", list(OFFSETS))
def test_random_matches_upstream(seed: int, kind: str, kernels) -> None:
    impl, module = kernels
    out = module.run_random(seed, _offsets(kind).to(impl.device))
    expected = REFERENCE[(seed, kind)]
    assert_equal(out["randint"].cpu(), np.array(expected["randint"], dtype=np.int64), "randint")
    assert_equal(out["randint4x"].cpu(), np.array(expected["randint4x"], dtype=np.int64), "randint4x")
    assert_equal(out["rand"].cpu(), np.array(expected["rand"], dtype=np.float32), "rand")
    assert_close(out["randn"].cpu(), np.array(expected["randn"], dtype=np.float32), name="float32", ulps=2,
                 what="randn")


def test_rand_range_and_uniformity(kernels) -> None:
    impl, module = kernels
    offsets = torch.arange(0, 4096, dtype=torch.int32, device=impl.device)
    values = torch.cat([module.run_random(seed, offsets[i:i + 1024])["rand"].cpu()
                        for seed in (3, 4) for i in range(0, 4096, 1024)])
    assert float(values.min()) >= 0.0 and float(values.max()) < 1.0
    assert abs(float(values.mean()) - 0.5) < 0.01


if __name__ == "__main__":
    if sys.argv[1:] == ["--record"]:
        print(_format(record()))
    else:
        print("usage: python -m tests.language.test_random_upstream --record")
