"""Typical classification pipelines as their documentation and tutorials write them, for the
import tests. Each is the pasted text a user would bring; the comment says where it is from
(variables inlined where the original used them, since the importer reads literals only)."""

from __future__ import annotations

# torchvision docs, "Transforming and augmenting images" (0.16+), image classification
TV_DOCS_V2 = """
import torch
from torchvision.transforms import v2

transforms = v2.Compose([
    v2.RandomResizedCrop(size=(224, 224), antialias=True),
    v2.RandomHorizontalFlip(p=0.5),
    v2.ToDtype(torch.float32, scale=True),
    v2.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
])
"""

# PyTorch tutorial "Transfer learning for computer vision", data_transforms (train and val)
TV_TRANSFER_LEARNING = """
from torchvision import transforms

data_transforms = {
    'train': transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    ]),
}
"""

TV_TRANSFER_LEARNING_VAL = """
from torchvision import transforms
val_transform = transforms.Compose([
    transforms.Resize(256),
    transforms.CenterCrop(224),
    transforms.ToTensor(),
    transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
])
"""

# torchvision references/classification/presets.py, ClassificationPresetTrain with
# auto_augment_policy="ta_wide", random_erase_prob=0.1 (the v2 branch)
TV_REFERENCE_RECIPE = """
import torch
from torchvision.transforms import v2 as T

train = T.Compose([
    T.RandomResizedCrop(176, interpolation=T.InterpolationMode.BILINEAR, antialias=True),
    T.RandomHorizontalFlip(0.5),
    T.TrivialAugmentWide(interpolation=T.InterpolationMode.BILINEAR),
    T.PILToTensor(),
    T.ToDtype(torch.float, scale=True),
    T.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
    T.RandomErasing(p=0.1),
    T.ToPureTensor(),
])
"""

# The classic CIFAR-10 training transform (pytorch-cifar and countless tutorials)
TV_CIFAR10 = """
import torchvision.transforms as transforms
transform_train = transforms.Compose([
    transforms.RandomCrop(32, padding=4),
    transforms.RandomHorizontalFlip(),
    transforms.ToTensor(),
    transforms.Normalize((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)),
])
"""

# torchvision AutoAugment docs example, with the usual tail
TV_AUTOAUGMENT = """
import torchvision.transforms as T
augmenter = T.Compose([
    T.Resize(256),
    T.AutoAugment(T.AutoAugmentPolicy.IMAGENET),
    T.CenterCrop(224),
    T.ToTensor(),
])
"""

# SimCLR's augmentation (Chen et al.; the PyTorch ports), s = 1, size 224
TV_SIMCLR = """
from torchvision import transforms
data_transforms = transforms.Compose([
    transforms.RandomResizedCrop(size=224),
    transforms.RandomHorizontalFlip(),
    transforms.RandomApply([transforms.ColorJitter(0.8, 0.8, 0.8, 0.2)], p=0.8),
    transforms.RandomGrayscale(p=0.2),
    transforms.GaussianBlur(kernel_size=23),
    transforms.ToTensor(),
])
"""

# torchvision v2: RandAugment recipe with erasing
TV_RANDAUGMENT = """
import torch
from torchvision.transforms import v2
train_tf = v2.Compose([
    v2.RandomResizedCrop(224, antialias=True),
    v2.RandomHorizontalFlip(),
    v2.RandAugment(num_ops=2, magnitude=9),
    v2.ToImage(),
    v2.ToDtype(torch.float32, scale=True),
    v2.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    v2.RandomErasing(p=0.25),
])
"""

# Albumentations README, "A simple example"
ALB_README = """
import albumentations as A
transform = A.Compose([
    A.RandomCrop(width=256, height=256),
    A.HorizontalFlip(p=0.5),
    A.RandomBrightnessContrast(p=0.2),
])
"""

# Albumentations image classification example (also used in activeloop's examples)
ALB_CLASSIFICATION = """
import albumentations as A
from albumentations.pytorch import ToTensorV2
train_transform = A.Compose(
    [
        A.SmallestMaxSize(max_size=160),
        A.ShiftScaleRotate(shift_limit=0.05, scale_limit=0.05, rotate_limit=15, p=0.5),
        A.RandomCrop(height=128, width=128),
        A.RGBShift(r_shift_limit=15, g_shift_limit=15, b_shift_limit=15, p=0.5),
        A.RandomBrightnessContrast(p=0.5),
        A.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
        ToTensorV2(),
    ]
)
"""

# Albumentations docs, the "strong augmentations" example with OneOf blocks (current names)
ALB_STRONG = """
import albumentations as A
transform = A.Compose([
    A.RandomRotate90(),
    A.Transpose(),
    A.GaussNoise(),
    A.OneOf([
        A.MotionBlur(p=.2),
        A.MedianBlur(blur_limit=3, p=0.1),
        A.Blur(blur_limit=3, p=0.1),
    ], p=0.2),
    A.ShiftScaleRotate(shift_limit=0.0625, scale_limit=0.2, rotate_limit=45, p=0.2),
    A.OneOf([
        A.OpticalDistortion(p=0.3),
        A.GridDistortion(p=.1),
    ], p=0.2),
    A.OneOf([
        A.CLAHE(clip_limit=2),
        A.Sharpen(),
        A.Emboss(),
        A.RandomBrightnessContrast(),
    ], p=0.3),
    A.HueSaturationValue(p=0.3),
])
"""

# A Kaggle-style classification pipeline (learnopencv "Bag of tricks", extended)
ALB_KAGGLE = """
import cv2
import albumentations as A
from albumentations.pytorch import ToTensorV2
train_aug = A.Compose([
    A.RandomResizedCrop(size=(224, 224), scale=(0.8, 1.0)),
    A.HorizontalFlip(),
    A.Rotate(limit=15, border_mode=cv2.BORDER_CONSTANT, p=0.5),
    A.ColorJitter(brightness=0.2, contrast=0.2, saturation=0.2, hue=0.05, p=0.5),
    A.ImageCompression(quality_range=(60, 100), p=0.3),
    A.CoarseDropout(num_holes_range=(1, 1), hole_height_range=(0.1, 0.25),
                    hole_width_range=(0.1, 0.25), p=0.3),
    A.ToGray(p=0.05),
    A.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ToTensorV2(),
])
"""

DOC_PIPELINES = {
    "tv_docs_v2": TV_DOCS_V2,
    "tv_transfer_learning": TV_TRANSFER_LEARNING,
    "tv_transfer_learning_val": TV_TRANSFER_LEARNING_VAL,
    "tv_reference_recipe": TV_REFERENCE_RECIPE,
    "tv_cifar10": TV_CIFAR10,
    "tv_autoaugment": TV_AUTOAUGMENT,
    "tv_simclr": TV_SIMCLR,
    "tv_randaugment": TV_RANDAUGMENT,
    "alb_readme": ALB_README,
    "alb_classification": ALB_CLASSIFICATION,
    "alb_strong": ALB_STRONG,
    "alb_kaggle": ALB_KAGGLE,
}

# Every transform of the coverage list, with values that exercise the conversions
TV_COVERAGE = """
import torchvision.transforms as T
coverage = T.Compose([
    T.RandomResizedCrop(224), T.Resize(256), T.CenterCrop(200), T.RandomCrop(180),
    T.RandomHorizontalFlip(), T.RandomVerticalFlip(), T.RandomRotation(15),
    T.RandomRotation(20, interpolation=T.InterpolationMode.BILINEAR),
    T.RandomAffine(degrees=0, shear=10), T.RandomAffine(degrees=0, scale=(0.8, 1.2)),
    T.RandomPerspective(), T.ColorJitter(brightness=0.4), T.ColorJitter(saturation=0.4),
    T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.Grayscale(3), T.RandomGrayscale(),
    T.GaussianBlur(9, sigma=(0.1, 1.5)), T.RandomErasing(), T.RandomPosterize(4),
    T.RandomSolarize(192), T.RandomSolarize(196.26666666666666),
    T.RandomAdjustSharpness(1.3), T.RandomAutocontrast(), T.RandomEqualize(),
    T.RandomInvert(), T.RandAugment(), T.TrivialAugmentWide(), T.AutoAugment(),
    T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
])
"""

ALB_COVERAGE = """
import cv2
import albumentations as A
from albumentations.pytorch import ToTensorV2
coverage = A.Compose([
    A.RandomResizedCrop(size=(128, 128)), A.SmallestMaxSize(max_size=200),
    A.CenterCrop(180, 180), A.RandomCrop(150, 150), A.HorizontalFlip(), A.VerticalFlip(),
    A.RandomRotate90(), A.Rotate(limit=30), A.Rotate(limit=30, interpolation=cv2.INTER_NEAREST),
    A.Affine(scale=(0.8, 1.2)), A.Affine(rotate=(-20, 20)), A.Affine(shear=(-10, 10)),
    A.ShiftScaleRotate(), A.Perspective(), A.ColorJitter(brightness=0.3, contrast=0,
                                                         saturation=0, hue=0),
    A.ColorJitter(), A.HueSaturationValue(), A.RandomBrightnessContrast(), A.CLAHE(),
    A.CLAHE(clip_limit=(2, 2)), A.GaussNoise(), A.ISONoise(), A.MotionBlur(), A.MedianBlur(),
    A.GaussianBlur(), A.Blur(blur_limit=3), A.CoarseDropout(),
    A.GridDropout(unit_size_range=(30, 40)), A.ImageCompression(quality_range=(30, 60)),
    A.ToGray(), A.Equalize(), A.InvertImg(), A.AutoContrast(), A.Posterize(num_bits=5),
    A.Solarize(threshold_range=(0.5, 0.5)), A.Sharpen(), A.Emboss(), A.ElasticTransform(),
    A.Normalize(), ToTensorV2(),
])
"""
