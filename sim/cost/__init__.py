"""The price of one iteration: the roofline (simple, roofline modes), its calibration to real
kernels, and the validation of both against measured GPU timings."""
