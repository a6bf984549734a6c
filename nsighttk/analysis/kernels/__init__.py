"""GPU kernels: name decoding, kernel facts, frameworks and libraries, occupancy and roofline."""
