"""Helpers the frame tests share to compare with pandas."""

from __future__ import annotations

import pandas as pd


def none_for_missing(df: pd.DataFrame) -> pd.DataFrame:
    """String columns with every missing value as None (pandas shows some as NaN)."""
    df = df.copy()
    for c in df.columns:
        if df[c].dtype == object or pd.api.types.is_string_dtype(df[c].dtype):
            df[c] = df[c].astype(object).where(df[c].notna(), None)
    return df
