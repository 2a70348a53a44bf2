"""Lantern: a WebGPU sample framework whose frames explain themselves."""
