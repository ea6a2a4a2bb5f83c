"""datasets - BinDataset (HPVM's binary dataset files) and the writer that
turns any PyTorch dataset into them.

HPVM's format (no header, native little-endian): the inputs are float32
N x C x H x W in C order, the labels one int32 class index per image. A
model without classes (segmentation, detection) has no labels file.
"""
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset


class BinDataset(Dataset):
    """A dataset stored in HPVM's binary files: `input_file` holds
    shape = (N, C, H, W) float32 images, `labels_file` N int32 labels, or
    None for images without labels.

    As HPVM's BinDataset, and also a torch Dataset of (image, label) pairs
    (a C x H x W float32 tensor and an int; without labels, the image
    alone), so that the files it describes can feed a DataLoader (e.g. into
    torch2hpvm.load()'s module)."""

    def __init__(self, input_file, labels_file, shape):
        self.input_file = Path(input_file)
        self.labels_file = None if labels_file is None else Path(labels_file)
        shape = tuple(shape)
        if len(shape) != 4 or not all(
                isinstance(d, (int, np.integer)) and d > 0 for d in shape):
            raise ValueError(f"Dataset shape must be 4 positive integers "
                             f"(N, C, H, W), got {shape}")
        self.shape = tuple(int(d) for d in shape)
        self.dataset_size = self.shape[0]
        self.sample_shape = self.shape[1:]
        n, c, h, w = self.shape
        files = [(self.input_file, "Input", n * c * h * w * 4,
                  f"{n} x {c} x {h} x {w} float32")]
        if self.labels_file is not None:
            files.append((self.labels_file, "Labels", n * 4,
                          f"{n} int32 labels"))
        for path, what, _, _ in files:
            if not path.is_file():
                raise FileNotFoundError(f"{what} file {path} not found")
        for path, _, want, what in files:
            have = path.stat().st_size
            if have != want:
                raise RuntimeError(f"{path} has {have} bytes; shape "
                                   f"{self.shape} needs {what} = {want} "
                                   f"bytes")
        self._inputs = None
        self._labels = None

    def _open(self):
        if self._inputs is None:
            self._inputs = np.memmap(self.input_file, dtype="<f4", mode="r",
                                     shape=self.shape)
            if self.labels_file is not None:
                self._labels = np.fromfile(self.labels_file, dtype="<i4")
        return self._inputs, self._labels

    def __len__(self):
        return self.dataset_size

    def __getitem__(self, index):
        inputs, labels = self._open()
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for a dataset of "
                             f"{len(self)} images")
        image = torch.from_numpy(np.array(inputs[index], dtype=np.float32))
        if labels is None:
            return image
        return image, int(labels[index])

    def __getstate__(self):
        # DataLoader workers reopen the files (memmaps are not shared).
        state = dict(self.__dict__)
        state["_inputs"] = state["_labels"] = None
        return state

    def __repr__(self):
        labels = (None if self.labels_file is None else
                  str(self.labels_file))
        return (f"BinDataset({str(self.input_file)!r}, {labels!r}, "
                f"{self.shape})")


def _as_array(value, what):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return value
    raise TypeError(f"{what} must be a torch.Tensor or numpy array, got "
                    f"{type(value).__name__}")


def _label(value, index):
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"sample {index}: the label must be one class "
                             f"index, got a tensor of shape "
                             f"{tuple(value.shape)}")
        value = value.item()
    elif isinstance(value, np.ndarray):
        if value.size != 1:
            raise ValueError(f"sample {index}: the label must be one class "
                             f"index, got an array of shape {value.shape}")
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise ValueError(f"sample {index}: the label must be an integer "
                         f"class index, got {value!r}")
    if not 0 <= int(value) < 2**31:
        raise ValueError(f"sample {index}: label {value} is not a class "
                         f"index (0 <= label < 2**31)")
    return int(value)


def split_sample(sample, index):
    """(images, labels) of one dataset sample: an (image, label) pair (a
    C x H x W or 1 x C x H x W image), or bare images (C x H x W, or
    K x C x H x W for K images), whose labels are None."""
    if isinstance(sample, (tuple, list)):
        if len(sample) != 2:
            raise ValueError(f"sample {index}: expected an (image, label) "
                             f"pair or an image, got a sequence of "
                             f"{len(sample)} items")
        image = _as_array(sample[0], f"sample {index}: the image")
        if image.ndim == 3:
            image = image[None]
        if image.ndim != 4 or image.shape[0] != 1:
            raise ValueError(f"sample {index}: the image of an (image, "
                             f"label) pair must be C x H x W (or 1 x C x H "
                             f"x W), got shape {image.shape}")
        return image, [_label(sample[1], index)]
    images = _as_array(sample, f"sample {index}")
    if images.ndim == 3:
        images = images[None]
    if images.ndim != 4:
        raise ValueError(f"sample {index}: an image sample must be C x H x W "
                         f"or K x C x H x W, got shape {images.shape}")
    return images, None


def first_sample_shape(dataset):
    """C, H, W of the images of a generic dataset (from its first sample)."""
    if len(dataset) == 0:
        raise ValueError("Dataset is empty")
    images, _ = split_sample(dataset[0], 0)
    return tuple(int(d) for d in images.shape[1:])


def write_bin(dataset, input_path, labels_path, chw):
    """Writes `dataset` (any map-style torch Dataset of (image, label) pairs
    or of bare images) to HPVM's files: float32 images to `input_path`,
    int32 labels to `labels_path`. Bare images have no labels: no labels
    file is written (the program then reports no accuracy). Returns (number
    of images, whether labels were given)."""
    count = 0
    labelled = None
    labels = []
    with open(input_path, "wb") as inputs:
        for index in range(len(dataset)):
            images, label = split_sample(dataset[index], index)
            if tuple(images.shape[1:]) != tuple(chw):
                raise ValueError(f"sample {index}: image shape "
                                 f"{tuple(images.shape[1:])} differs from "
                                 f"the first sample's {tuple(chw)}")
            has = label is not None
            if labelled is None:
                labelled = has
            elif labelled != has:
                raise ValueError(f"sample {index}: mixes (image, label) "
                                 f"pairs and bare images")
            inputs.write(np.ascontiguousarray(images, dtype="<f4").tobytes())
            if has:
                labels.append(np.asarray(label, dtype="<i4").tobytes())
            count += images.shape[0]
    if labelled:
        with open(labels_path, "wb") as out:
            out.write(b"".join(labels))
    return count, bool(labelled)


def is_dataset(obj):
    return isinstance(obj, (BinDataset, Dataset))


def dataset_shape(dataset):
    """(N, C, H, W) of a BinDataset or a generic dataset (N counted from the
    dataset's length: each sample one image, or K for K x C x H x W bare
    samples, which are counted when written)."""
    if isinstance(dataset, BinDataset):
        return dataset.shape
    return (len(dataset),) + first_sample_shape(dataset)
