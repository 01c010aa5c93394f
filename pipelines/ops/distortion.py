"""Non-linear distortions: water ripples, sphere bulge and random jitter."""

from __future__ import annotations

from ..labels import Refuse
from ..opspec import OpSpec
from ..params import Param, fill, interp

_NON_RIGID = ("a non-rigid distortion: DALI does not expose where each pixel goes, so boxes "
              "and keypoints cannot follow it exactly")

OPS = [
    OpSpec(
        "water",
        "distortion",
        "Water ripples: sinusoidal displacement along both axes.",
        "fn.water({x}, ampl_x={ampl_x}, ampl_y={ampl_y}, freq_x={freq_x}, freq_y={freq_y}, "
        "phase_x={phase_x}, phase_y={phase_y}, fill_value={fill_value}, "
        "interp_type={interp_type})",
        (
            # no neutral: one amplitude at 0 leaves the other axis rippling (both at 0 do not)
            Param("ampl_x", "float", 10.0, "Horizontal amplitude", bounds=(0, 200),
                  slider=(0, 40), step=0.5, unit="px", dali_arg="ampl_x"),
            Param("ampl_y", "float", 10.0, "Vertical amplitude", bounds=(0, 200),
                  slider=(0, 40), step=0.5, unit="px", dali_arg="ampl_y"),
            Param("freq_x", "float", 0.049087, "Horizontal frequency", bounds=(0, 2),
                  slider=(0, 0.3), step=0.001, unit="rad/px", dali_arg="freq_x"),
            Param("freq_y", "float", 0.049087, "Vertical frequency", bounds=(0, 2),
                  slider=(0, 0.3), step=0.001, unit="rad/px", dali_arg="freq_y"),
            Param("phase_x", "float", 0.0, "Horizontal phase", bounds=(-6.2832, 6.2832),
                  slider=(0, 6.2832), step=0.01, unit="rad", dali_arg="phase_x"),
            Param("phase_y", "float", 0.0, "Vertical phase", bounds=(-6.2832, 6.2832),
                  slider=(0, 6.2832), step=0.01, unit="rad", dali_arg="phase_y"),
            fill(),
            interp("nn"),
        ),
        magnitude="ampl_x",
        schema="Water",
        labels=Refuse(_NON_RIGID),
        aliases=("ripple", "wave"),
    ),
    OpSpec(
        "sphere",
        "distortion",
        "Sphere (fish-eye) bulge from the image centre.",
        "fn.sphere({x}, fill_value={fill_value}, interp_type={interp_type})",
        (fill(), interp("nn")),
        schema="Sphere",
        labels=Refuse(_NON_RIGID),
        aliases=("fisheye", "fish-eye", "OpticalDistortion", "barrel distortion"),
    ),
    OpSpec(
        "jitter",
        "distortion",
        "Random per-pixel jitter: each pixel moves by up to nDegree/2 along x and y.",
        "fn.jitter({x}, nDegree={nDegree}, fill_value={fill_value}, seed={seed})",
        (
            # DALI: "Each pixel is moved by a random amount in the [-nDegree/2, nDegree/2] range"
            Param("nDegree", "int", 2, "Width of the displacement range (+-nDegree/2)",
                  bounds=(1, 64), slider=(1, 16), step=1, unit="px", dali_arg="nDegree"),
            fill(),
        ),
        devices=frozenset({"gpu"}),
        gpu_reason="DALI 2.4 implements it only on the GPU",
        magnitude="nDegree",
        schema="Jitter",
        labels=Refuse(_NON_RIGID + " (each pixel moves at random)"),
        aliases=("pixel jitter", "displacement"),
    ),
]
