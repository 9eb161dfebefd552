// Runs tritone's generated CUDA C++ on the CPU (cuda_emulator.py says how).
//
// Every GPU thread of a block is a fiber (ucontext) on one OS thread; a fiber
// runs until it reaches a barrier or a warp-collective instruction and then
// yields. Barriers count arrivals; collectives (mma.sync, ldmatrix, shuffles)
// first let every lane of the warp deposit its operands, then let each lane
// compute its own results from all of them. Shared memory is one buffer per
// block, addressed by 32-bit offsets (what cvta.to.shared gives); global memory
// is host memory, and every global access must fall inside a launch argument's
// buffer. A cp.async reads global memory when issued and writes shared memory
// at the cp.async.wait_group that completes its group, so reading a stage early
// reads stale data. Errors (an access out of bounds, a deadlock, an
// instruction the emulator does not know) stop the launch with a message.
// C headers only: they compile several times faster than the C++ library's.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

struct tt_emu_dim3 { unsigned x, y, z; };

// CUDA's built-in vector types the generated code reads shared memory with.
struct __attribute__((aligned(8))) float2 { float x, y; };
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
struct __attribute__((aligned(16))) double2 { double x, y; };

// A cp.async copy in flight: its bytes read at issue, written at the wait completing `group`.
struct tt_emu_copy { uint32_t dst, nbytes; unsigned long long group; unsigned char bytes[16]; };

struct tt_emu_lane_slot {
  uint32_t a[8], b[8], c[8];
  uint32_t address;
  uint64_t value;
};

struct tt_emu_thread {
  ucontext_t ctx;
  tt_emu_dim3 tid;
  int lane, warp;
  bool done;
  void* stack;
  tt_emu_copy* copies;  // in issue order
  int ncopies, capacity;
  unsigned long long next_group;  // the group the copies issued now join
};

struct tt_emu_buffer { uintptr_t start; size_t size; };

enum { tt_emu_max_threads = 1024, tt_emu_max_buffers = 64 };

struct tt_emu_state {
  ucontext_t scheduler;
  tt_emu_thread threads[tt_emu_max_threads];
  unsigned nthreads;
  tt_emu_thread* cur;
  tt_emu_dim3 block, grid, block_dim;
  unsigned char* smem;
  size_t smem_bytes;
  unsigned bar_count, bar_gen;
  unsigned warp_count[tt_emu_max_threads / 32], warp_gen[tt_emu_max_threads / 32];
  tt_emu_lane_slot slots[tt_emu_max_threads];
  tt_emu_buffer buffers[tt_emu_max_buffers];
  int nbuffers;
  unsigned long long progress;
  bool failed;
  char error[512];
  void (*entry)(void**);
  void** args;
};

static tt_emu_state tt_emu_S;
static const size_t tt_emu_stack_bytes = size_t(8) << 20;

#define threadIdx (tt_emu_S.cur->tid)
#define blockIdx (tt_emu_S.block)
#define gridDim (tt_emu_S.grid)
#define blockDim (tt_emu_S.block_dim)

static void tt_emu_fail(const char* message) {
  if (!tt_emu_S.failed) {
    tt_emu_S.failed = true;
    snprintf(tt_emu_S.error, sizeof tt_emu_S.error, "%s (block %u,%u,%u thread %u)", message, tt_emu_S.block.x,
             tt_emu_S.block.y, tt_emu_S.block.z, tt_emu_S.cur ? tt_emu_S.cur->tid.x : 0u);
  }
  setcontext(&tt_emu_S.scheduler);  // abandons the fiber
}

static void tt_emu_yield() { swapcontext(&tt_emu_S.cur->ctx, &tt_emu_S.scheduler); }

static void __syncthreads() {
  auto& S = tt_emu_S;
  unsigned gen = S.bar_gen;
  S.progress++;
  if (++S.bar_count == S.nthreads) {
    S.bar_count = 0;
    S.bar_gen++;
    return;
  }
  while (S.bar_gen == gen) tt_emu_yield();
}

static void tt_emu_warp_sync() {
  auto& S = tt_emu_S;
  int w = S.cur->warp;
  unsigned gen = S.warp_gen[w];
  S.progress++;
  if (++S.warp_count[w] == 32) {
    S.warp_count[w] = 0;
    S.warp_gen[w]++;
    return;
  }
  while (S.warp_gen[w] == gen) tt_emu_yield();
}

static tt_emu_lane_slot& tt_emu_slot(int lane) { return tt_emu_S.slots[tt_emu_S.cur->warp * 32 + lane]; }

// -- memory -------------------------------------------------------------------------

static unsigned char* tt_emu_shared(uint64_t address, unsigned nbytes) {
  char message[128];
  if (address % nbytes != 0) {
    snprintf(message, sizeof message, "misaligned %u-byte shared access at %llu", nbytes, (unsigned long long)address);
    tt_emu_fail(message);
  }
  if (address + nbytes > tt_emu_S.smem_bytes) {
    snprintf(message, sizeof message, "shared access at %llu beyond the %zu bytes of the block",
             (unsigned long long)address, tt_emu_S.smem_bytes);
    tt_emu_fail(message);
  }
  return tt_emu_S.smem + address;
}

static unsigned char* tt_emu_global(uint64_t address, unsigned nbytes) {
  if (address % nbytes != 0) tt_emu_fail("misaligned global access");
  for (int i = 0; i < tt_emu_S.nbuffers; ++i) {
    const tt_emu_buffer& b = tt_emu_S.buffers[i];
    if (address >= b.start && address + nbytes <= b.start + b.size) return reinterpret_cast<unsigned char*>(address);
  }
  tt_emu_fail("global access outside every argument buffer");
  return nullptr;
}

static uint64_t tt_emu_load(unsigned char* p, unsigned nbytes) {
  uint64_t v = 0;
  memcpy(&v, p, nbytes);
  return v;
}

static void tt_emu_store(unsigned char* p, uint64_t v, unsigned nbytes) { memcpy(p, &v, nbytes); }

static uint64_t tt_emu_to_shared(uint64_t generic) { return generic - reinterpret_cast<uintptr_t>(tt_emu_S.smem); }

static void tt_emu_cp_async(uint64_t dst, uint64_t src, unsigned nbytes, uint64_t src_bytes) {
  tt_emu_thread* t = tt_emu_S.cur;
  tt_emu_shared(dst, nbytes);
  if (t->ncopies == t->capacity) {
    t->capacity = t->capacity ? 2 * t->capacity : 16;
    t->copies = static_cast<tt_emu_copy*>(realloc(t->copies, sizeof(tt_emu_copy) * size_t(t->capacity)));
  }
  tt_emu_copy& copy = t->copies[t->ncopies++];
  copy.dst = uint32_t(dst);
  copy.nbytes = nbytes;
  copy.group = t->next_group;
  memset(copy.bytes, 0, sizeof copy.bytes);
  unsigned n = src_bytes < nbytes ? unsigned(src_bytes) : nbytes;
  if (n) memcpy(copy.bytes, tt_emu_global(src, nbytes), n);
}

static void tt_emu_cp_async_commit() { tt_emu_S.cur->next_group++; }

// Lands every copy of the groups committed before the `pending` most recent ones.
static void tt_emu_cp_async_wait(unsigned pending) {
  tt_emu_thread* t = tt_emu_S.cur;
  int kept = 0;
  for (int i = 0; i < t->ncopies; ++i) {
    tt_emu_copy& c = t->copies[i];
    if (c.group + pending < t->next_group)
      memcpy(tt_emu_shared(c.dst, c.nbytes), c.bytes, c.nbytes);
    else
      t->copies[kept++] = c;
  }
  t->ncopies = kept;
}

// -- numbers --------------------------------------------------------------------------

static float tt_emu_f(uint64_t bits) { float f; uint32_t b = uint32_t(bits); memcpy(&f, &b, 4); return f; }
static uint64_t tt_emu_fbits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
static double tt_emu_d(uint64_t bits) { double d; memcpy(&d, &bits, 8); return d; }
static uint64_t tt_emu_dbits(double d) { uint64_t b; memcpy(&b, &d, 8); return b; }

static float __uint_as_float(unsigned x) { return tt_emu_f(x); }
static unsigned __float_as_uint(float x) { return unsigned(tt_emu_fbits(x)); }
static int __float_as_int(float x) { return int(tt_emu_fbits(x)); }
static float __int_as_float(int x) { return tt_emu_f(unsigned(x)); }
static double __longlong_as_double(long long x) { return tt_emu_d(uint64_t(x)); }
static long long __double_as_longlong(double x) { return (long long)tt_emu_dbits(x); }
// Each rounded alone (the host compiler builds without FMA instructions, so nothing fuses).
static float __fadd_rn(float a, float b) { return a + b; }
static float __fsub_rn(float a, float b) { return a - b; }
static float __fmul_rn(float a, float b) { return a * b; }
static double __dadd_rn(double a, double b) { return a + b; }
static double __dsub_rn(double a, double b) { return a - b; }
static double __dmul_rn(double a, double b) { return a * b; }

static float tt_emu_f16_to_f32(uint32_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return tt_emu_f(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    float v = ldexp(float(man), -24);
    return sign ? -v : v;
  }
  return tt_emu_f(sign | ((exp + 112) << 23) | (man << 13));
}

// Round to nearest even, through double (exact: a float has fewer digits than a double
// has beyond an fp16's).
static uint32_t tt_emu_f64_to_f16(double x) {
  if (isnan(x)) return 0x7fff;
  uint32_t sign = signbit(x) ? 0x8000u : 0;
  double a = fabs(x);
  if (a >= 65520.0) return sign | 0x7c00;
  if (a < ldexp(1.0, -14)) return sign | uint32_t(nearbyint(a * ldexp(1.0, 24)));
  int e;
  frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  double scaled = nearbyint(ldexp(a, 11 - e));  // 11 significant bits
  double v = ldexp(scaled, e - 11);
  if (v >= 65520.0) return sign | 0x7c00;
  frexp(v, &e);
  uint32_t man = uint32_t(ldexp(v, 11 - e)) & 0x3ff;
  return sign | (uint32_t(e - 1 + 15) << 10) | man;
}

static uint32_t tt_emu_f32_to_bf16(float x) {
  uint32_t u = uint32_t(tt_emu_fbits(x));
  if (isnan(x)) return 0x7fff;
  u += 0x7fff + ((u >> 16) & 1);
  return u >> 16;
}

static float tt_emu_bf16_to_f32(uint32_t h) { return tt_emu_f(h << 16); }

// atom.min/max on one f16 or bf16 element, modelled as the GPU's min.f16/max.f16 (IEEE
// 754-2019 minimumNumber/maximumNumber: a NaN loses to a number, -0.0 below +0.0).
static uint64_t tt_emu_min_max16(uint64_t memory, uint64_t value, bool bf16, bool is_max) {
  memory &= 0xffff;
  value &= 0xffff;
  float a = bf16 ? tt_emu_bf16_to_f32(uint32_t(memory)) : tt_emu_f16_to_f32(uint32_t(memory));
  float b = bf16 ? tt_emu_bf16_to_f32(uint32_t(value)) : tt_emu_f16_to_f32(uint32_t(value));
  if (isnan(a) || isnan(b)) return isnan(a) ? value : memory;
  if (a == b) {  // zeros of either sign: min takes a negative one, max a positive one
    bool negative = (value & 0x8000) != 0;
    return negative != is_max ? value : memory;
  }
  return (is_max ? b > a : b < a) ? value : memory;
}

static float tt_emu_e4m3_to_f32(uint32_t b) {
  uint32_t s = b & 0x80, e = (b >> 3) & 0xf, m = b & 7;
  if ((b & 0x7f) == 0x7f) return NAN;
  float v = e ? ldexp(1.0f + m / 8.0f, int(e) - 7) : ldexp(float(m), -9);
  return s ? -v : v;
}

static float tt_emu_e5m2_to_f32(uint32_t b) { return tt_emu_f16_to_f32(b << 8); }

static float tt_emu_max_nan(float a, float b) { return (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b); }
static float tt_emu_min_nan(float a, float b) { return (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b); }

static uint64_t tt_emu_prmt(uint64_t a, uint64_t b, uint64_t c) {
  unsigned char bytes[8];
  uint32_t lo = uint32_t(a), hi = uint32_t(b);
  memcpy(bytes, &lo, 4);
  memcpy(bytes + 4, &hi, 4);
  uint32_t out = 0;
  for (int i = 0; i < 4; ++i) {
    uint32_t sel = (c >> (4 * i)) & 0xf;
    uint32_t byte = bytes[sel & 7];
    if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;
    out |= byte << (8 * i);
  }
  return out;
}

// -- warp collectives ---------------------------------------------------------------------

template <class T>
static T tt_emu_shuffle(T v, int source) {
  auto& mine = tt_emu_slot(tt_emu_S.cur->lane);
  mine.value = 0;
  memcpy(&mine.value, &v, sizeof(T));
  tt_emu_warp_sync();
  T r;
  uint64_t bits = tt_emu_slot(source & 31).value;
  memcpy(&r, &bits, sizeof(T));
  tt_emu_warp_sync();
  return r;
}

template <class T> static T __shfl_xor_sync(unsigned, T v, int mask, int = 32) {
  return tt_emu_shuffle(v, tt_emu_S.cur->lane ^ mask);
}
template <class T> static T __shfl_sync(unsigned, T v, int lane, int = 32) { return tt_emu_shuffle(v, lane); }

static void tt_emu_ldmatrix(int count, bool trans, uint64_t address, uint64_t* out) {
  int lane = tt_emu_S.cur->lane;
  tt_emu_slot(lane).address = uint32_t(address);
  tt_emu_warp_sync();
  int g = lane >> 2, t = lane & 3;
  for (int q = 0; q < count; ++q) {
    uint32_t rows[8];
    for (int r = 0; r < 8; ++r) {
      rows[r] = tt_emu_slot(8 * q + r).address;
      if (rows[r] % 16) tt_emu_fail("ldmatrix row address not 16-byte aligned");
    }
    if (!trans) {
      out[q] = tt_emu_load(tt_emu_shared(rows[g] + 4 * t, 4), 4);
    } else {
      uint64_t lo = tt_emu_load(tt_emu_shared(rows[2 * t] + 2 * g, 2), 2);
      uint64_t hi = tt_emu_load(tt_emu_shared(rows[2 * t + 1] + 2 * g, 2), 2);
      out[q] = lo | (hi << 16);
    }
  }
  tt_emu_warp_sync();
}

// mma.sync: fragment layouts of PTX_FACTS 1.2. Element types: 0 f16, 1 bf16,
// 2 tf32, 3 s8, 4 e4m3, 5 e5m2; accumulators: 0 f16 (two per register), 1 f32, 2 s32.
static double tt_emu_element(int type, uint32_t reg, int index_in_reg) {
  switch (type) {
    case 0: return tt_emu_f16_to_f32((reg >> (16 * index_in_reg)) & 0xffff);
    case 1: return tt_emu_bf16_to_f32((reg >> (16 * index_in_reg)) & 0xffff);
    case 2: return tt_emu_f(reg & 0xffffe000u);  // the tensor core reads 19 bits
    case 3: return double(int8_t((reg >> (8 * index_in_reg)) & 0xff));
    case 4: return tt_emu_e4m3_to_f32((reg >> (8 * index_in_reg)) & 0xff);
    default: return tt_emu_e5m2_to_f32((reg >> (8 * index_in_reg)) & 0xff);
  }
}

static int tt_emu_per_reg(int type) { return type == 2 ? 1 : (type == 0 || type == 1) ? 2 : 4; }

// (row, k) of element i of lane (g, t)'s a fragment; (k, n) of b's; m x n x k shape.
static void tt_emu_a_coords(int m, int k, int per_reg, int g, int t, int i, int* row, int* col) {
  if (m == 8) {  // m8n8k16 s8
    *row = g;
    *col = 4 * t + i;
    return;
  }
  int regs_k = k / (4 * per_reg);  // 32-bit registers along k per row half
  int reg = i / per_reg, part = i % per_reg;
  int half = reg % 2, kblock = reg / 2;
  (void)regs_k;
  *row = g + 8 * half;
  *col = per_reg * t + part + 4 * per_reg * kblock;
}

static void tt_emu_b_coords(int per_reg, int g, int t, int i, int* kk, int* n) {
  int reg = i / per_reg, part = i % per_reg;
  *kk = per_reg * t + part + 4 * per_reg * reg;
  *n = g;
}

static void tt_emu_mma(int m, int n, int k, int a_type, int b_type, int acc, bool saturate, const uint64_t* a,
                       int na, const uint64_t* b, int nb, const uint64_t* c, int nc, uint64_t* d) {
  int lane = tt_emu_S.cur->lane;
  auto& mine = tt_emu_slot(lane);
  for (int i = 0; i < na; ++i) mine.a[i] = uint32_t(a[i]);
  for (int i = 0; i < nb; ++i) mine.b[i] = uint32_t(b[i]);
  for (int i = 0; i < nc; ++i) mine.c[i] = uint32_t(c[i]);
  tt_emu_warp_sync();
  double A[16][32] = {}, B[32][8] = {};
  int pa = tt_emu_per_reg(a_type), pb = tt_emu_per_reg(b_type);
  for (int l = 0; l < 32; ++l) {
    auto& s = tt_emu_slot(l);
    int g = l >> 2, t = l & 3;
    for (int i = 0; i < na * pa; ++i) {
      int row, col;
      tt_emu_a_coords(m, k, pa, g, t, i, &row, &col);
      A[row][col] = tt_emu_element(a_type, s.a[i / pa], i % pa);
    }
    for (int i = 0; i < nb * pb; ++i) {
      int kk, col;
      tt_emu_b_coords(pb, g, t, i, &kk, &col);
      B[kk][col] = tt_emu_element(b_type, s.b[i / pb], i % pb);
    }
  }
  int g = lane >> 2, t = lane & 3;
  int elems = m == 8 ? 2 : 4;
  for (int i = 0; i < elems; ++i) {
    int row = g + 8 * (i >> 1), col = 2 * t + (i & 1);
    if (acc == 2) {
      int64_t sum = int32_t(mine.c[i]);
      for (int kk = 0; kk < k; ++kk) sum += int64_t(A[row][kk]) * int64_t(B[kk][col]);
      if (saturate) sum = sum > INT32_MAX ? INT32_MAX : sum < INT32_MIN ? INT32_MIN : sum;
      d[i] = uint32_t(int32_t(uint32_t(sum)));
      continue;
    }
    double sum = acc == 1 ? double(tt_emu_f(mine.c[i])) : tt_emu_f16_to_f32((mine.c[i / 2] >> (16 * (i & 1))) & 0xffff);
    for (int kk = 0; kk < k; ++kk) sum += A[row][kk] * B[kk][col];
    if (acc == 1) {
      d[i] = tt_emu_fbits(float(sum));
    } else {
      uint64_t h = tt_emu_f64_to_f16(sum);
      d[i / 2] = (i & 1) ? (d[i / 2] | (h << 16)) : h;
    }
  }
  tt_emu_warp_sync();
}

// An instruction the emulator does not know; fails only when executed.
static void tt_emu_unsupported(const char* ptx) {
  char message[256];
  snprintf(message, sizeof message, "unsupported PTX: %s", ptx);
  tt_emu_fail(message);
}

template <class T> static uint64_t tt_emu_bits(const T& v) {
  uint64_t r = 0;
  memcpy(&r, &v, sizeof(T) < 8 ? sizeof(T) : 8);
  return r;
}
template <class T> static void tt_emu_set(T& x, uint64_t v) { memcpy(&x, &v, sizeof(T) < 8 ? sizeof(T) : 8); }
static void tt_emu_set(bool& x, uint64_t v) { x = v != 0; }

// -- launching -----------------------------------------------------------------------------

static void tt_emu_fiber(int index) {
  (void)index;
  tt_emu_S.entry(tt_emu_S.args);
  tt_emu_S.cur->done = true;
  tt_emu_S.progress++;
  swapcontext(&tt_emu_S.cur->ctx, &tt_emu_S.scheduler);
}

static bool tt_emu_run_block(unsigned nthreads) {
  tt_emu_state& S = tt_emu_S;
  S.nthreads = nthreads;
  unsigned warps = (nthreads + 31) / 32;
  memset(S.warp_count, 0, sizeof S.warp_count);
  memset(S.warp_gen, 0, sizeof S.warp_gen);
  memset(S.slots, 0, sizeof S.slots);
  S.bar_count = 0;
  memset(S.smem, 0xa5, S.smem_bytes);  // never zeros: reads of what nothing wrote show
  (void)warps;
  for (unsigned i = 0; i < nthreads; ++i) {
    tt_emu_thread& t = S.threads[i];
    t.tid = {i, 0, 0};
    t.lane = int(i % 32);
    t.warp = int(i / 32);
    t.done = false;
    t.ncopies = 0;
    t.next_group = 0;
    if (!t.stack)
      t.stack = mmap(nullptr, tt_emu_stack_bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    getcontext(&t.ctx);
    t.ctx.uc_stack.ss_sp = t.stack;
    t.ctx.uc_stack.ss_size = tt_emu_stack_bytes;
    t.ctx.uc_link = nullptr;
    makecontext(&t.ctx, reinterpret_cast<void (*)()>(tt_emu_fiber), 1, int(i));
  }
  unsigned idle_rounds = 0;
  for (;;) {
    bool live = false;
    unsigned long long before = S.progress;
    for (unsigned i = 0; i < nthreads && !S.failed; ++i) {
      tt_emu_thread& t = S.threads[i];
      if (t.done) continue;
      live = true;
      S.cur = &t;
      swapcontext(&S.scheduler, &t.ctx);
    }
    if (S.failed || !live) break;
    idle_rounds = S.progress == before ? idle_rounds + 1 : 0;
    if (idle_rounds > 2) {
      S.failed = true;
      snprintf(S.error, sizeof S.error, "deadlock: threads wait at barriers or collectives that others never reach");
      break;
    }
  }
  for (unsigned i = 0; i < nthreads && !S.failed; ++i)
    if (S.threads[i].ncopies) {
      S.failed = true;
      snprintf(S.error, sizeof S.error, "thread %u exited with cp.async copies not waited for", i);
    }
  S.cur = nullptr;
  return !S.failed;
}

// Runs the kernel `entry` (which unpacks `args`) on a grid; 0 when it ran to the end,
// else 1 with the message in `error`.
extern "C" int tt_emu_launch(void (*entry)(void**), unsigned gx, unsigned gy, unsigned gz, unsigned nthreads,
                             unsigned shared_bytes, void** args, const uint64_t* buffers, const uint64_t* sizes,
                             int nbuffers, char* error, int error_len) {
  tt_emu_state& S = tt_emu_S;
  if (nthreads > tt_emu_max_threads || nbuffers > tt_emu_max_buffers) {
    snprintf(error, size_t(error_len), "too many threads or buffers");
    return 1;
  }
  S.failed = false;
  S.error[0] = 0;
  S.entry = entry;
  S.args = args;
  S.grid = {gx, gy, gz};
  S.block_dim = {nthreads, 1, 1};
  S.smem_bytes = shared_bytes ? shared_bytes : 16;
  S.smem = static_cast<unsigned char*>(aligned_alloc(128, (S.smem_bytes + 127) / 128 * 128));
  S.nbuffers = nbuffers;
  for (int i = 0; i < nbuffers; ++i) S.buffers[i] = {uintptr_t(buffers[i]), size_t(sizes[i])};
  int rc = 0;
  for (unsigned z = 0; z < gz && !rc; ++z)
    for (unsigned y = 0; y < gy && !rc; ++y)
      for (unsigned x = 0; x < gx && !rc; ++x) {
        S.block = {x, y, z};
        if (!tt_emu_run_block(nthreads)) {
          snprintf(error, size_t(error_len), "%s", S.error);
          rc = 1;
        }
      }
  free(S.smem);
  S.smem = nullptr;
  return rc;
}
