#include "zccl_data.h"

#include <math.h>
#include <netcdf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int fail(char* err, size_t len, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, len, fmt, ap);
  va_end(ap);
  return -1;
}

static int ends_with(const char* s, const char* suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int file_exists(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int load_raw(const char* path, int file_double, int want_double, zccl_data_t* d, char* err,
                    size_t len) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return fail(err, len, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long bytes = ftell(f);
  fseek(f, 0, SEEK_SET);
  size_t esize = file_double ? 8 : 4;
  if (bytes <= 0 || bytes % (long)esize != 0) {
    fclose(f);
    return fail(err, len, "%s: size %ld is not a positive multiple of %zu bytes", path, bytes, esize);
  }
  d->count = (size_t)bytes / esize;
  void* raw = malloc((size_t)bytes);
  if (raw == NULL || fread(raw, 1, (size_t)bytes, f) != (size_t)bytes) {
    free(raw);
    fclose(f);
    return fail(err, len, "%s: read failed", path);
  }
  fclose(f);
  if (file_double == want_double) {
    d->values = raw;
  } else {
    d->values = malloc(d->count * (want_double ? 8 : 4));
    if (d->values == NULL) {
      free(raw);
      return fail(err, len, "out of memory");
    }
    for (size_t i = 0; i < d->count; i++) {
      if (want_double) ((double*)d->values)[i] = ((float*)raw)[i];
      else ((float*)d->values)[i] = (float)((double*)raw)[i];
    }
    free(raw);
  }
  d->is_double = want_double;
  snprintf(d->source, sizeof d->source, "%s", path);
  return 0;
}

static int load_netcdf(const char* path, const char* var, int want_double, zccl_data_t* d, char* err,
                       size_t len) {
  int nc, varid, ndims, dims[NC_MAX_VAR_DIMS], st;
  nc_type type;
  if ((st = nc_open(path, NC_NOWRITE, &nc)) != NC_NOERR)
    return fail(err, len, "%s: %s", path, nc_strerror(st));
  if ((st = nc_inq_varid(nc, var, &varid)) != NC_NOERR) {
    nc_close(nc);
    return fail(err, len, "%s: no variable '%s' (%s)", path, var, nc_strerror(st));
  }
  nc_inq_var(nc, varid, NULL, &type, &ndims, dims, NULL);
  if (type != NC_FLOAT && type != NC_DOUBLE) {
    nc_close(nc);
    return fail(err, len, "%s:%s is not a float or double variable", path, var);
  }
  size_t count = 1;
  for (int i = 0; i < ndims; i++) {
    size_t n;
    nc_inq_dimlen(nc, dims[i], &n);
    count *= n;
  }
  d->count = count;
  d->values = malloc(count * (want_double ? 8 : 4));
  if (d->values == NULL) {
    nc_close(nc);
    return fail(err, len, "out of memory for %zu values", count);
  }
  st = want_double ? nc_get_var_double(nc, varid, d->values) : nc_get_var_float(nc, varid, d->values);
  if (st != NC_NOERR) {
    nc_close(nc);
    return fail(err, len, "%s:%s: %s", path, var, nc_strerror(st));
  }
  double fill;
  if (nc_get_att_double(nc, varid, "_FillValue", &fill) == NC_NOERR) {
    d->has_fill = 1;
    /* Compare in the loaded precision: a float fill widened to double. */
    d->fill = want_double ? fill : (double)(float)fill;
  }
  nc_close(nc);
  d->is_double = want_double;
  snprintf(d->source, sizeof d->source, "%s:%s", path, var);
  return 0;
}

int zccl_data_load(const char* spec, int want_double, zccl_data_t* d, char* err, size_t errlen) {
  memset(d, 0, sizeof *d);
  char path[512];
  snprintf(path, sizeof path, "%s", spec);
  if (ends_with(path, ".f32") || ends_with(path, ".f64"))
    return load_raw(path, ends_with(path, ".f64"), want_double, d, err, errlen);
  char* colon = strrchr(path, ':');
  if (colon == NULL)
    return fail(err, errlen, "'%s': expected file.f32, file.f64 or file.nc:VARIABLE", spec);
  *colon = '\0';
  const char* var = colon + 1;
  char found[600];
  snprintf(found, sizeof found, "%s", path);
  if (!file_exists(found) && path[0] != '/')
    snprintf(found, sizeof found, "%s/%s", ZCCL_DATA_FERRET_DIR, path);
  if (!file_exists(found))
    return fail(err, errlen, "'%s' not found (also looked in %s; Debian package ferret-datasets)", path,
                ZCCL_DATA_FERRET_DIR);
  return load_netcdf(found, var, want_double, d, err, errlen);
}

void zccl_data_free(zccl_data_t* d) {
  free(d->values);
  d->values = NULL;
  d->count = 0;
}

void zccl_data_tile(const zccl_data_t* d, size_t offset, void* dst, size_t count) {
  size_t esize = d->is_double ? 8 : 4;
  size_t pos = offset % d->count, done = 0;
  while (done < count) {
    size_t n = d->count - pos;
    if (n > count - done) n = count - done;
    memcpy((char*)dst + done * esize, (const char*)d->values + pos * esize, n * esize);
    done += n;
    pos = 0;
  }
}

size_t zccl_data_replace_fill(zccl_data_t* d, double value) {
  size_t n = 0;
  for (size_t i = 0; i < d->count; i++) {
    double v = d->is_double ? ((double*)d->values)[i] : ((float*)d->values)[i];
    if (!isfinite(v) || (d->has_fill && v == d->fill)) {
      if (d->is_double) ((double*)d->values)[i] = value;
      else ((float*)d->values)[i] = (float)value;
      n++;
    }
  }
  return n;
}
