/* zccl-cuda-probe: what this GPU and driver let one thread do while a
 * kernel spins on another stream, waiting for a flag in mapped host memory
 * (how a stream-ordered zccl call holds the caller's stream), and while a
 * second thread is blocked on that held stream (a pageable copy, a stream
 * or event synchronisation: what a program does right after a call). The
 * progress thread must be able to run the operation in that state, or the
 * hold never ends.
 *   zccl-cuda-probe [seconds=2]
 * Each probe runs in a child process forked before any CUDA call (a stuck
 * CUDA call cannot be interrupted): "ok" with the milliseconds it took,
 * "not run" when the call returned but its work had not run after the
 * limit, "stuck" when the call itself had not returned. Exits 77 without a
 * usable GPU. */
#include <cuda_runtime.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

__global__ static void spin(volatile int* flag) {
  while (!*flag) __nanosleep(1000);
}
__global__ static void touch(int* p) { p[0] += 1; }
__global__ static void never_launched(int* p) { p[1] += 1; } /* loaded lazily by the probe, if at all */

static double limit_s = 2.0;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void CUDART_CB set_flag(void* arg) { __atomic_store_n((int*)arg, 1, __ATOMIC_RELEASE); }

/* What blocks on the held stream in a second thread. */
enum { C_NONE, C_PAGEABLE, C_STREAM_SYNC, C_EVENT_SYNC, NCOND };
static const char* cond_names[NCOND] = {"nothing else", "pageable D2H copy", "cudaStreamSynchronize",
                                        "cudaEventSynchronize"};
enum { P_HOSTFN, P_KERNEL, P_NEW_KERNEL, P_PINNED_COPY, P_EVENT, P_MALLOC, P_HOSTALLOC, P_FREE, P_FREEHOST,
       P_MALLOCASYNC, NPROBE };
static const char* probe_names[NPROBE] = {"cudaLaunchHostFunc runs", "loaded kernel runs", "first launch runs",
                                          "pinned copy runs", "event record+query", "cudaMalloc",
                                          "cudaHostAlloc", "cudaFree", "cudaFreeHost", "cudaMallocAsync"};

typedef struct {
  int cond;
  cudaStream_t held;
  cudaEvent_t after;
  void* dev;
} blocker_t;

static void* block_on_held(void* arg) {
  blocker_t* b = (blocker_t*)arg;
  void* host = malloc(1 << 20);
  if (b->cond == C_PAGEABLE) cudaMemcpyAsync(host, b->dev, 1 << 20, cudaMemcpyDeviceToHost, b->held);
  if (b->cond == C_STREAM_SYNC) cudaStreamSynchronize(b->held);
  if (b->cond == C_EVENT_SYNC) cudaEventSynchronize(b->after);
  free(host);
  return NULL;
}

/* Waits for the event (the probe's work) up to the limit: 1 when it ran. */
static int ran(cudaEvent_t e, double t0) {
  while (now() - t0 < limit_s) {
    if (cudaEventQuery(e) == cudaSuccess) return 1;
    usleep(200);
  }
  return 0;
}

/* The child: sets up, holds a stream, starts the blocker, runs one probe,
 * writes its verdict to fd. */
static void child(int cond, int probe, int fd) {
  int *flag, *flag_d, *d;
  void *pinned, *spare_d, *spare_h;
  cudaStream_t held, other;
  cudaEvent_t after, done;
  if (cudaSetDevice(0) != cudaSuccess) _exit(3);
  cudaHostAlloc((void**)&flag, sizeof(int), cudaHostAllocMapped);
  cudaHostGetDevicePointer((void**)&flag_d, flag, 0);
  *flag = 0;
  cudaStreamCreateWithFlags(&held, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
  cudaEventCreateWithFlags(&after, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
  cudaMalloc((void**)&d, 1 << 20);
  cudaMalloc(&spare_d, 1 << 20);
  cudaHostAlloc(&spare_h, 1 << 20, cudaHostAllocDefault);
  cudaHostAlloc(&pinned, 1 << 20, cudaHostAllocDefault);
  touch<<<1, 1, 0, other>>>(d); /* loaded now */
  cudaDeviceSynchronize();
  spin<<<1, 1, 0, held>>>(flag_d);
  cudaEventRecord(after, held);
  pthread_t th;
  blocker_t b = {cond, held, after, d};
  if (cond != C_NONE) pthread_create(&th, NULL, block_on_held, &b);
  usleep(200000);

  char out[64];
  double t0 = now();
  int ok = 1;
  volatile int fn_ran = 0;
  void* p = NULL;
  switch (probe) {
    case P_HOSTFN:
      cudaLaunchHostFunc(other, set_flag, (void*)&fn_ran);
      while (!fn_ran && now() - t0 < limit_s) usleep(200);
      ok = fn_ran;
      break;
    case P_KERNEL: touch<<<1, 1, 0, other>>>(d); cudaEventRecord(done, other); ok = ran(done, t0); break;
    case P_NEW_KERNEL: never_launched<<<1, 1, 0, other>>>(d); cudaEventRecord(done, other); ok = ran(done, t0); break;
    case P_PINNED_COPY:
      cudaMemcpyAsync(pinned, d, 1 << 20, cudaMemcpyDeviceToHost, other);
      cudaEventRecord(done, other);
      ok = ran(done, t0);
      break;
    case P_EVENT: cudaEventRecord(done, other); ok = ran(done, t0); break;
    case P_MALLOC: cudaMalloc(&p, 1 << 20); break;
    case P_HOSTALLOC: cudaHostAlloc(&p, 1 << 20, cudaHostAllocPortable); break;
    case P_FREE: cudaFree(spare_d); break;
    case P_FREEHOST: cudaFreeHost(spare_h); break;
    case P_MALLOCASYNC: cudaMallocAsync(&p, 1 << 20, other); break;
    default: break;
  }
  snprintf(out, sizeof out, ok ? "ok %.1f ms" : "not run", (now() - t0) * 1e3);
  if (write(fd, out, strlen(out) + 1) < 0) _exit(4);
  _exit(0); /* the spinning kernel goes with the context */
}

int main(int argc, char** argv) {
  if (argc > 1) limit_s = atof(argv[1]);
  if (!(limit_s > 0)) return fprintf(stderr, "usage: zccl-cuda-probe [seconds > 0]\n"), 2;
  /* Is there a GPU? Asked in a child, so this process stays free of CUDA. */
  pid_t pid = fork();
  if (pid == 0) {
    int n = 0;
    _exit(cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : 77);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    printf("zccl-cuda-probe: skipped: no usable CUDA device\n");
    return 77;
  }
  printf("# beside a kernel spinning on a held stream; limit %.1f s per probe\n%-26s", limit_s, "probe \\ meanwhile");
  for (int c = 0; c < NCOND; c++) printf(" | %-22s", cond_names[c]);
  printf("\n");
  for (int p = 0; p < NPROBE; p++) {
    printf("%-26s", probe_names[p]);
    for (int c = 0; c < NCOND; c++) {
      int fds[2];
      if (pipe(fds) != 0) return 1;
      fflush(stdout);
      pid = fork();
      if (pid == 0) {
        close(fds[0]);
        child(c, p, fds[1]);
      }
      close(fds[1]);
      char verdict[64] = "stuck";
      struct pollfd pf = {fds[0], POLLIN, 0};
      /* Setup takes a moment; the probe itself has limit_s. */
      if (poll(&pf, 1, (int)(limit_s * 1000) + 5000) > 0 && read(fds[0], verdict, sizeof verdict - 1) <= 0)
        snprintf(verdict, sizeof verdict, "setup failed");
      close(fds[0]);
      kill(pid, SIGKILL);
      waitpid(pid, NULL, 0);
      printf(" | %-22s", verdict);
    }
    printf("\n");
  }
  return 0;
}
