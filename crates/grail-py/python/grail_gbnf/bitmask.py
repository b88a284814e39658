"""Token bitmasks: int32 arrays of shape (batch, ceil(vocab_size / 32)) where bit t % 32 of
word t // 32 is set when token t is allowed (the layout xgrammar and llguidance use)."""

from typing import Any, List, Optional

import numpy as np


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """A bitmask for `batch_size` sequences over `vocab_size` tokens, every token allowed
    (all bits set) until a matcher fills its row."""
    if batch_size < 1 or vocab_size < 1:
        raise ValueError("batch_size and vocab_size must be at least 1")
    return np.full((batch_size, (vocab_size + 31) // 32), -1, dtype=np.int32)


def bitmask_to_token_ids(bitmask: Any, index: int = 0, vocab_size: Optional[int] = None) -> List[int]:
    """The token ids allowed by row `index` of `bitmask` (for inspection and tests)."""
    array = np.asarray(bitmask, dtype=np.int32)
    row = array if array.ndim == 1 else array[index]
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")
    if vocab_size is not None:
        bits = bits[:vocab_size]
    return np.flatnonzero(bits).tolist()


def _allowed_numpy(bitmask: np.ndarray, width: int) -> np.ndarray:
    bits = np.unpackbits(np.ascontiguousarray(bitmask, dtype=np.int32).view(np.uint8), axis=-1, bitorder="little")
    allowed = bits.astype(bool)
    if allowed.shape[-1] >= width:
        return allowed[..., :width]
    pad = np.zeros(allowed.shape[:-1] + (width - allowed.shape[-1],), dtype=bool)
    return np.concatenate([allowed, pad], axis=-1)


def apply_token_bitmask_inplace(logits: Any, bitmask: Any, indices: Optional[List[int]] = None) -> None:
    """Sets the logits of disallowed tokens to -inf, in place.

    `logits`: a numpy array or a torch tensor, shape (batch, vocab) or (vocab,).
    `bitmask`: as `allocate_token_bitmask` makes it (numpy or torch), one row per logits
    row (or `indices`: which bitmask rows go with the logits rows, in order). Tokens past
    the bitmask's width (a model's padded vocabulary) are disallowed.
    """
    if _apply_native(logits, bitmask, indices):
        return
    if type(logits).__module__.split(".")[0] == "torch":
        _apply_torch(logits, bitmask, indices)
        return
    if not isinstance(logits, np.ndarray):
        raise TypeError("logits must be a numpy array or a torch tensor")
    mask = np.asarray(bitmask)
    if indices is not None:
        mask = mask[list(indices)]
    width = logits.shape[-1]
    allowed = _allowed_numpy(mask, width)
    if logits.ndim == 1 and allowed.ndim == 2:
        allowed = allowed[0]
    logits[~allowed] = -np.inf


def _apply_native(logits: Any, bitmask: Any, indices: Optional[List[int]]) -> bool:
    """Float32 logits on the CPU with an int32 CPU bitmask: -inf written in place by the
    native module, rows on threads (False, nothing done, for anything else)."""
    from ._native import mask_logits

    module = type(logits).__module__.split(".")[0]
    if module == "torch":
        if logits.device.type != "cpu" or str(logits.dtype) != "torch.float32" or logits.stride(-1) != 1:
            return False
    elif not (isinstance(logits, np.ndarray) and logits.dtype == np.float32 and logits.flags.writeable
              and logits.strides[-1] == 4):
        return False
    if logits.ndim not in (1, 2):
        return False
    mask = bitmask
    if type(mask).__module__.split(".")[0] == "torch":
        if mask.device.type != "cpu" or not mask.is_contiguous():
            return False
        mask = mask.numpy()
    mask = np.asarray(mask)
    if mask.dtype != np.int32:
        return False
    mask = np.ascontiguousarray(mask.reshape(1, -1) if mask.ndim == 1 else mask)
    if indices is not None:  # bitmask rows `indices` go with the logits rows, in order
        mask = np.ascontiguousarray(mask[list(indices)])
    if logits.ndim == 1:
        mask_logits(logits, mask[:1])
    elif logits.shape[0] == mask.shape[0]:
        mask_logits(logits, mask)
    else:
        return False  # the other paths say what does not fit
    return True


def _apply_torch(logits: Any, bitmask: Any, indices: Optional[List[int]]) -> None:
    import torch

    mask = bitmask if isinstance(bitmask, torch.Tensor) else torch.from_numpy(np.asarray(bitmask))
    mask = mask.to(device=logits.device, dtype=torch.int32)
    if indices is not None:
        mask = mask[torch.as_tensor(list(indices), device=mask.device)]
    shifts = torch.arange(32, device=mask.device, dtype=torch.int32)
    allowed = ((mask.unsqueeze(-1) >> shifts) & 1).bool().flatten(-2)
    width = logits.shape[-1]
    if allowed.shape[-1] >= width:
        allowed = allowed[..., :width]
    else:
        pad = torch.zeros(allowed.shape[:-1] + (width - allowed.shape[-1],), dtype=torch.bool, device=allowed.device)
        allowed = torch.cat([allowed, pad], dim=-1)
    if logits.dim() == 1 and allowed.dim() == 2:
        allowed = allowed[0]
    logits.masked_fill_(~allowed, float("-inf"))
