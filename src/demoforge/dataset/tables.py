"""Arrow schemas and parquet files in the exact form lerobot 0.6.1 writes them."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from demoforge.dataset.layout import Feature

_ARROW = {
    "float32": pa.float32(), "float64": pa.float64(), "int8": pa.int8(), "int16": pa.int16(),
    "int32": pa.int32(), "int64": pa.int64(), "uint8": pa.uint8(), "bool": pa.bool_(), "string": pa.string(),
}


def _hf_feature(ft: Feature) -> dict:
    value = {"dtype": ft.dtype, "_type": "Value"}
    if ft.shape == (1,):
        return value
    return {"feature": value, "length": ft.shape[0], "_type": "List"}


def data_schema(features: Mapping[str, Feature]) -> pa.Schema:
    """Schema of data/*.parquet: every non-video feature, with the `huggingface` metadata."""
    fields = []
    hf = {}
    for key, ft in features.items():
        if ft.dtype == "video":
            continue
        typ = _ARROW[ft.dtype]
        fields.append(pa.field(key, typ if ft.shape == (1,) else pa.list_(typ, ft.shape[0])))
        hf[key] = _hf_feature(ft)
    meta = {"huggingface": json.dumps({"info": {"features": hf}})}
    return pa.schema(fields, metadata=meta)


def data_table(columns: Mapping[str, np.ndarray], schema: pa.Schema) -> pa.Table:
    """Columns as (T, n) / (T,) arrays -> an arrow table in `schema`."""
    arrays = []
    for field in schema:
        arr = np.ascontiguousarray(columns[field.name])
        if pa.types.is_fixed_size_list(field.type):
            flat = pa.array(arr.reshape(-1), type=field.type.value_type)
            arrays.append(pa.FixedSizeListArray.from_arrays(flat, field.type.list_size))
        else:
            arrays.append(pa.array(arr.reshape(-1), type=field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def write_parquet_atomic(path: Path, tables: Iterable[pa.Table], schema: pa.Schema | None = None) -> None:
    """Write tables to `path`, one row group each, through a temporary name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    if schema is None:
        tables = list(tables)
        schema = tables[0].schema
    with parquet_writer(tmp, schema) as writer:
        for table in tables:
            writer.write_table(table, row_group_size=max(1, table.num_rows))
    fsync_file(tmp)
    tmp.replace(path)


def parquet_writer(path: Path, schema: pa.Schema) -> pq.ParquetWriter:
    """The dataset's parquet settings: snappy, and dictionary pages only where values repeat
    (ints, strings): on float columns pyarrow builds a dictionary, finds it too large and falls
    back to plain pages, a third of the write time."""
    dictionary = [f.name for f in schema if not _is_float(f.type)]
    return pq.ParquetWriter(path, schema, compression="snappy", use_dictionary=dictionary)


def _is_float(t: pa.DataType) -> bool:
    while pa.types.is_fixed_size_list(t) or pa.types.is_list(t):
        t = t.value_type
    return pa.types.is_floating(t)


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def tasks_table(tasks: list[str]) -> pa.Table:
    """meta/tasks.parquet: `task_index` column and `task` as the recorded pandas index."""
    pandas_meta = {
        "index_columns": ["task"],
        "column_indexes": [{"name": None, "field_name": None, "pandas_type": "unicode", "numpy_type": "object",
                            "metadata": {"encoding": "UTF-8"}}],
        "columns": [
            {"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64",
             "metadata": None},
            {"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object",
             "metadata": None},
        ],
        "attributes": {},
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.3.3",
    }
    schema = pa.schema([pa.field("task_index", pa.int64()), pa.field("task", pa.string())],
                       metadata={"pandas": json.dumps(pandas_meta)})
    return pa.Table.from_arrays([pa.array(range(len(tasks)), pa.int64()), pa.array(tasks, pa.string())],
                                schema=schema)
