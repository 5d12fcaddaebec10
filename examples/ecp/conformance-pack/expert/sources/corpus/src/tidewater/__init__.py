"""Tidewater: tide predictions from harmonic constituents."""

from .station import Constituent, Station
from .predict import predict_height, predict_series

__all__ = ["Constituent", "Station", "predict_height", "predict_series"]
