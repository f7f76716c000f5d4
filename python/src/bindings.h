// One registration function per area of mlx.core.
#pragma once

#include <nanobind/nanobind.h>

void init_dtypes(nanobind::module_& m);
void init_device(nanobind::module_& m);
void init_array(nanobind::module_& m);
void init_ops(nanobind::module_& m);
void init_memory(nanobind::module_& m);
void init_memory_trace(nanobind::module_& m);  // called by init_memory
void init_indexing(nanobind::module_& m);
void init_transforms(nanobind::module_& m);
void init_random(nanobind::module_& m);
void init_fast(nanobind::module_& m);
void init_custom_kernels(nanobind::module_& fast);  // called by init_fast
void init_interop(nanobind::module_& m);
void init_io(nanobind::module_& m);
void init_linalg(nanobind::module_& m);
void init_distributed(nanobind::module_& m);
void init_conv(nanobind::module_& m);
void init_fft(nanobind::module_& m);
void init_quantized(nanobind::module_& m);
void init_grouped_matmul(nanobind::module_& m);
void init_export(nanobind::module_& m);
