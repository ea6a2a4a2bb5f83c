"""piped.py - the tuner's side of HPVM's inspect protocol, in a few lines.

What HPVM's predtuner (PipedBinaryApp) does with a binary built for the
hpvm_tensor_inspect target (reference section 8.5): create the two FIFOs
named in ops.json with mkfifo, start the binary (no arguments), and per
measurement write the configuration file, write "test" or "tune" into the
binary's request FIFO, read the binary's result FIFO to EOF (one record per
batch: uint64 ndims, uint64 dims[ndims], float32 data), then read and delete
final_accuracy in the binary's working directory. "stop" ends the binary.

Every blocking step has a deadline, and a binary that dies or stalls is
reported with its exit status and the tail of its stderr instead of hanging
the test (a FIFO open blocks until the other side opens it).
"""
import errno
import json
import os
import subprocess
import threading
import time

import numpy as np


class ProtocolError(Exception):
    """The binary broke the protocol, died or stalled."""


def decode_records(data, where):
    """Decodes the result FIFO's bytes into a list of float32 arrays."""
    out, pos = [], 0
    while pos < len(data):
        if pos + 8 > len(data):
            raise ProtocolError(f"{where}: truncated record header at byte "
                                f"{pos} of {len(data)}")
        ndims = int(np.frombuffer(data, "<u8", 1, pos)[0])
        if not 1 <= ndims <= 8:
            raise ProtocolError(f"{where}: record at byte {pos} has "
                                f"{ndims} dimensions")
        pos += 8
        if pos + 8 * ndims > len(data):
            raise ProtocolError(f"{where}: truncated dims at byte {pos}")
        dims = [int(d) for d in np.frombuffer(data, "<u8", ndims, pos)]
        pos += 8 * ndims
        count = int(np.prod(dims))
        if pos + 4 * count > len(data):
            raise ProtocolError(f"{where}: record of shape {dims} needs "
                                f"{4 * count} bytes at byte {pos}, only "
                                f"{len(data) - pos} left")
        out.append(np.frombuffer(data, "<f4", count, pos).reshape(dims))
        pos += 4 * count
    return out


class PipedBinary:
    """One running inspect binary, driven as HPVM's tuner drives it."""

    def __init__(self, binary, ops_json, cwd, timeout=120, args=()):
        with open(ops_json) as f:
            meta = json.load(f)
        missing = [k for k in ("conf_path", "fifo_path_r", "fifo_path_w")
                   if k not in meta]
        if missing:
            raise ProtocolError(f"{ops_json} lacks {', '.join(missing)} "
                                f"(the inspect target's ops.json fields)")
        self.conf_path = meta["conf_path"]
        self.fifo_r, self.fifo_w = meta["fifo_path_r"], meta["fifo_path_w"]
        self.cwd, self.timeout = cwd, timeout
        self.tune_labels_path = meta.get("tune_labels_path")
        self.last_shapes = []  # Record shapes of the last measurement.
        for path in (self.fifo_r, self.fifo_w):
            if os.path.lexists(path):
                os.remove(path)
            os.mkfifo(path)
        self.log_path = os.path.join(cwd, "inspect_stderr.log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([binary, *args], cwd=cwd,
                                     stdout=subprocess.DEVNULL,
                                     stderr=self._log)

    def _died(self, step):
        self.proc.poll()
        with open(self.log_path, errors="replace") as f:
            tail = "".join(f.readlines()[-20:])
        state = (f"exited with status {self.proc.returncode}"
                 if self.proc.returncode is not None else "still running")
        return ProtocolError(f"inspect binary {state} while {step}:\n{tail}")

    def send(self, word):
        """Writes `word` (no newline, as the tuner does) into the request
        FIFO once the binary has opened it for reading."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fd = os.open(self.fifo_r, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as e:
                if e.errno != errno.ENXIO:
                    raise
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise self._died(f"waiting to read request '{word}'")
            time.sleep(0.005)
        try:
            os.write(fd, word.encode())
        finally:
            os.close(fd)

    def _receive(self):
        """Reads the result FIFO to EOF (the binary closes it after the last
        batch)."""
        box = {}

        def reader():
            try:
                with open(self.fifo_w, "rb") as f:
                    box["data"] = f.read()
            except OSError as e:
                box["error"] = e

        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        deadline = time.monotonic() + self.timeout
        while thread.is_alive():
            thread.join(0.01)
            if thread.is_alive() and (self.proc.poll() is not None or
                                      time.monotonic() > deadline):
                err = self._died("sending results")
                # Unblock the reader thread's open() so it can finish.
                try:
                    os.close(os.open(self.fifo_w,
                                     os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass
                thread.join(1)
                raise err
        if "error" in box:
            raise ProtocolError(f"{self.fifo_w}: {box['error']}")
        return box["data"]

    def measure(self, conf_text, dataset):
        """Runs one configuration (the whole file's text) on `dataset`
        ('test' or 'tune'); returns (outputs N x classes, final accuracy)."""
        tmp = self.conf_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(conf_text)
        os.replace(tmp, self.conf_path)
        self.send(dataset)
        data = self._receive()
        records = decode_records(data, self.fifo_w)
        if not records:
            raise self._died(f"running '{dataset}': no result records")
        self.last_shapes = [list(r.shape) for r in records]
        outputs = np.concatenate(records, axis=0)
        # HPVM's tuner squeezes the trailing 1x1 of N x C x 1 x 1 results.
        while outputs.ndim > 2 and outputs.shape[-1] == 1:
            outputs = outputs[..., 0]
        acc_path = os.path.join(self.cwd, "final_accuracy")
        if not os.path.isfile(acc_path):
            raise self._died(f"running '{dataset}': no {acc_path}")
        with open(acc_path) as f:
            accuracy_text = f.read()
        os.remove(acc_path)
        return outputs, accuracy_text

    def stop(self):
        """Sends 'stop'; returns the binary's exit status."""
        self.send("stop")
        try:
            return self.proc.wait(self.timeout)
        except subprocess.TimeoutExpired:
            raise self._died("stopping")

    def close(self):
        """Kills the binary if it still runs; removes the FIFOs."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log.close()
        for path in (self.fifo_r, self.fifo_w):
            if os.path.lexists(path):
                os.remove(path)
