/* Input data for zccl's tools and benchmarks: raw little-endian .f32/.f64
 * files and NetCDF variables ("file.nc:VAR", through libnetcdf), with the
 * variable's _FillValue. Not part of libzccl. */
#ifndef ZCCL_DATA_H_
#define ZCCL_DATA_H_

#include <stddef.h>

typedef struct {
  int is_double;    /* values are double (else float) */
  size_t count;     /* number of values */
  void* values;
  int has_fill;     /* the source declares a fill value (NetCDF _FillValue) */
  double fill;
  char source[1024]; /* resolved path[:VAR] */
} zccl_data_t;

/* Directory searched for relative NetCDF paths not found as given (the
 * ferret-datasets package's climate and ocean fields). */
#define ZCCL_DATA_FERRET_DIR "/usr/share/ferret-vis/data"

/* Loads spec as float (want_double 0) or double (1), converting as needed.
 * Returns 0, or -1 with a message in err. */
int zccl_data_load(const char* spec, int want_double, zccl_data_t* data, char* err, size_t errlen);
void zccl_data_free(zccl_data_t* data);

/* Fills dst with count values read cyclically from data starting at offset
 * (so one field fills any size, and ranks can start at different places). */
void zccl_data_tile(const zccl_data_t* data, size_t offset, void* dst, size_t count);

/* Replaces fill values (and non-finite ones) by `value`; returns how many. */
size_t zccl_data_replace_fill(zccl_data_t* data, double value);

#endif /* ZCCL_DATA_H_ */
