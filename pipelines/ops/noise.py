"""Noise and compression artefacts."""

from __future__ import annotations

from ..labels import KEEP
from ..opspec import OpSpec
from ..params import Param, unit_interval

OPS = [
    OpSpec(
        "noise.gaussian",
        "noise",
        "Additive Gaussian noise (standard deviation in grey levels).",
        "fn.noise.gaussian({x}, stddev={stddev}, seed={seed})",
        (Param("stddev", "float", 15.0, "Noise standard deviation", bounds=(0, 255),
               slider=(0, 60), step=0.5, neutral=0.0, unit="level", runtime=True,
               dali_arg="stddev", random_default=(5, 25)),),
        magnitude="stddev",
        schema="noise__Gaussian",
        aliases=("GaussNoise", "GaussianNoise", "ISONoise"),
        labels=KEEP,
    ),
    OpSpec(
        "noise.salt_and_pepper",
        "noise",
        "Replace a fraction of pixels by white or black.",
        "fn.noise.salt_and_pepper({x}, prob={prob}, salt_vs_pepper={salt_vs_pepper}, "
        "per_channel={per_channel}, seed={seed})",
        (
            unit_interval("prob", 0.05, "Fraction of pixels replaced", slider=(0, 0.3),
                          step=0.005, neutral=0.0, random_default=(0.01, 0.1)),
            unit_interval("salt_vs_pepper", 0.5, "Share of white among replaced pixels"),
            Param("per_channel", "bool", False, "Draw per channel (coloured specks)",
                  dali_arg="per_channel"),
        ),
        magnitude="prob",
        schema="noise__SaltAndPepper",
        aliases=("SaltAndPepper", "impulse noise"),
        labels=KEEP,
    ),
    OpSpec(
        "noise.shot",
        "noise",
        "Poisson (shot) noise: each event adds factor levels; larger factors are noisier.",
        "fn.noise.shot({x}, factor={factor}, seed={seed})",
        # no neutral (small factors come close to the input, never exactly) and 0 is refused:
        # DALI documents factor 0 as the identity, but DALI 2.4's CPU operator returns black
        (Param("factor", "float", 20.0, "Grey levels per Poisson event", bounds=(0.01, 1000),
               slider=(0.5, 100), step=0.5, runtime=True, dali_arg="factor",
               random_default=(5, 40)),),
        magnitude="factor",
        schema="noise__Shot",
        aliases=("ShotNoise", "Poisson noise"),
        labels=KEEP,
    ),
    OpSpec(
        "jpeg_compression_distortion",
        "noise",
        "JPEG compression artefacts at a given quality (100 is still lossy).",
        "fn.jpeg_compression_distortion({x}, quality={quality})",
        (Param("quality", "int", 30, "JPEG quality", bounds=(1, 100), slider=(1, 100), step=1,
               runtime=True, dali_arg="quality", random_default=(10, 60)),),
        magnitude="quality",
        schema="JpegCompressionDistortion",
        aliases=("JPEG", "ImageCompression", "JpegCompression"),
        labels=KEEP,
    ),
]
