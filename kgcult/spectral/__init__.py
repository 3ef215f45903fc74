"""spectral"""
