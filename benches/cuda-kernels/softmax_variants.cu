// Hand-written softmax kernels over rows, timed against a device-to-device
// copy of the same buffer: the experiments behind the CUDA back end's row
// kernels (docs/performance.md, "Rows on an H200"). Not part of the build:
// on a GPU machine, `nvcc -O3 -arch=native -std=c++17 -fmad=false
// softmax_variants.cu -o softmax_variants && ./softmax_variants` (any
// argument: the first shape only). Every variant is compared with the
// first (a block per row) and marked WRONG when it differs.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cmath>
typedef unsigned long long __ein_u64;
template <typename T> static __device__ __forceinline__ T __ein_shfl(T v, int s) { return __shfl_xor_sync(0xffffffffu, v, s); }
// The combination steps every variant shares: a warp's lanes by shuffles,
// then (in a block) the warps' results through shared memory `sh`.
static __device__ __forceinline__ float warp_max(float acc) {
    for (int s = 16; s > 0; s >>= 1) { float v = __ein_shfl(acc, s); if (v > acc) acc = v; }
    return acc;
}
static __device__ __forceinline__ float warp_sum(float sum) {
    for (int s = 16; s > 0; s >>= 1) sum += __ein_shfl(sum, s);
    return sum;
}
// The warps' results (`combine`d from `identity`) through shared memory.
template <typename Warp>
static __device__ __forceinline__ float block_combine(float acc, float* sh, float identity, Warp combine) {
    acc = combine(acc);
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = combine(threadIdx.x < (blockDim.x >> 5) ? sh[threadIdx.x] : identity);
        if (threadIdx.x == 0) sh[0] = acc;
    }
    __syncthreads(); const float r = sh[0]; __syncthreads();
    return r;
}
static __device__ __forceinline__ float block_max(float acc, float* sh) {
    return block_combine(acc, sh, __int_as_float(0xff800000), warp_max);
}
static __device__ __forceinline__ float block_sum(float sum, float* sh) {
    return block_combine(sum, sh, 0.0f, warp_sum);
}
// a block per row: the generated block kernel condensed (`blk_t<long long, 4>`),
// and with 32-bit indices (`I = int`) or unrolled by 8 (`U = 8`)
template <typename I, int U>
__global__ void blk_t(float* __restrict__ out, const float* __restrict__ x, long long X0, long long X1) {
    __shared__ float sh[32];
    const I n = (I)X0, m = (I)X1;
    for (I p = blockIdx.x; p < n; p += gridDim.x) {
        const float* row = x + (long long)p * m;
        float acc = __int_as_float(0xff800000);
        #pragma unroll U
        for (I q = threadIdx.x; q < m; q += blockDim.x) { float v = row[q]; if (v > acc) acc = v; }
        const float mx = block_max(acc, sh);
        float sum = 0;
        #pragma unroll U
        for (I q = threadIdx.x; q < m; q += blockDim.x) sum += expf(row[q] - mx);
        const float tot = block_sum(sum, sh);
        #pragma unroll U
        for (I q = threadIdx.x; q < m; q += blockDim.x) out[(long long)p * m + q] = expf(row[q] - mx) / tot;
    }
}
extern "C" __global__ void warp(float* __restrict__ out, const float* __restrict__ x, long long X0, long long X1) {
    const int lane = threadIdx.x & 31;
    for (long long p = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); p < X0; p += (long long)gridDim.x * (blockDim.x >> 5)) {
        float acc = __int_as_float(0xff800000);
        #pragma unroll 4
        for (long long q = lane; q < X1; q += 32) { float v = x[p * X1 + q]; if (v > acc) acc = v; }
        acc = warp_max(acc);
        float sum = 0;
        #pragma unroll 4
        for (long long q = lane; q < X1; q += 32) sum += expf(x[p * X1 + q] - acc);
        sum = warp_sum(sum);
        #pragma unroll 4
        for (long long q = lane; q < X1; q += 32) out[p * X1 + q] = expf(x[p * X1 + q] - acc) / sum;
    }
}

// a block per row, the row staged in dynamic shared memory
extern "C" __global__ void blks(float* __restrict__ out, const float* __restrict__ x, long long X0, long long X1) {
    __shared__ float sh[32];
    extern __shared__ float st[];
    for (long long p = blockIdx.x; p < X0; p += gridDim.x) {
        #pragma unroll 4
        for (long long q = threadIdx.x; q < X1; q += blockDim.x) st[q] = x[p * X1 + q];
        __syncthreads();
        float acc = __int_as_float(0xff800000);
        #pragma unroll 4
        for (long long q = threadIdx.x; q < X1; q += blockDim.x) { float v = st[q]; if (v > acc) acc = v; }
        const float mx = block_max(acc, sh);
        float sum = 0;
        #pragma unroll 4
        for (long long q = threadIdx.x; q < X1; q += blockDim.x) sum += expf(st[q] - mx);
        const float tot = block_sum(sum, sh);
        #pragma unroll 4
        for (long long q = threadIdx.x; q < X1; q += blockDim.x) out[p * X1 + q] = expf(st[q] - mx) / tot;
        __syncthreads();
    }
}
// a warp per row, the rows of the block's warps staged in dynamic shared memory
extern "C" __global__ void warps(float* __restrict__ out, const float* __restrict__ x, long long X0, long long X1) {
    extern __shared__ float st_all[];
    float* st = st_all + (threadIdx.x >> 5) * X1;
    const int lane = threadIdx.x & 31;
    for (long long p = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); p < X0; p += (long long)gridDim.x * (blockDim.x >> 5)) {
        #pragma unroll 4
        for (long long q = lane; q < X1; q += 32) st[q] = x[p * X1 + q];
        __syncwarp();
        float acc = __int_as_float(0xff800000);
        #pragma unroll 4
        for (long long q = lane; q < X1; q += 32) { float v = st[q]; if (v > acc) acc = v; }
        acc = warp_max(acc);
        float sum = 0;
        #pragma unroll 4
        for (long long q = lane; q < X1; q += 32) sum += expf(st[q] - acc);
        sum = warp_sum(sum);
        #pragma unroll 4
        for (long long q = lane; q < X1; q += 32) out[p * X1 + q] = expf(st[q] - acc) / sum;
        __syncwarp();
    }
}
template <int K>
__global__ void regs(float* __restrict__ out, const float* __restrict__ x, long long X0, long long X1) {
    __shared__ float sh[32];
    for (long long p = blockIdx.x; p < X0; p += gridDim.x) {
        float r[K];
        #pragma unroll
        for (int k = 0; k < K; k++) { long long q = threadIdx.x + (long long)k * blockDim.x; r[k] = q < X1 ? x[p * X1 + q] : __int_as_float(0xff800000); }
        float acc = __int_as_float(0xff800000);
        #pragma unroll
        for (int k = 0; k < K; k++) if (r[k] > acc) acc = r[k];
        const float mx = block_max(acc, sh);
        float sum = 0;
        #pragma unroll
        for (int k = 0; k < K; k++) { long long q = threadIdx.x + (long long)k * blockDim.x; if (q < X1) sum += expf(r[k] - mx); }
        const float tot = block_sum(sum, sh);
        #pragma unroll
        for (int k = 0; k < K; k++) { long long q = threadIdx.x + (long long)k * blockDim.x; if (q < X1) out[p * X1 + q] = expf(r[k] - mx) / tot; }
    }
}
template <int K>
__global__ void wregs(float* __restrict__ out, const float* __restrict__ x, long long X0, long long X1) {
    const int lane = threadIdx.x & 31;
    for (long long p = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); p < X0; p += (long long)gridDim.x * (blockDim.x >> 5)) {
        float r[K];
        #pragma unroll
        for (int k = 0; k < K; k++) { long long q = lane + 32LL * k; r[k] = q < X1 ? x[p * X1 + q] : __int_as_float(0xff800000); }
        float acc = __int_as_float(0xff800000);
        #pragma unroll
        for (int k = 0; k < K; k++) if (r[k] > acc) acc = r[k];
        acc = warp_max(acc);
        float sum = 0;
        #pragma unroll
        for (int k = 0; k < K; k++) { long long q = lane + 32LL * k; if (q < X1) sum += expf(r[k] - acc); }
        sum = warp_sum(sum);
        #pragma unroll
        for (int k = 0; k < K; k++) { long long q = lane + 32LL * k; if (q < X1) out[p * X1 + q] = expf(r[k] - acc) / sum; }
    }
}
extern "C" __global__ void blkst(float* __restrict__ out, const float* __restrict__ x, long long X0, long long X1) {
    __shared__ float sh[32];
    for (long long p = blockIdx.x; p < X0; p += gridDim.x) {
        float acc = __int_as_float(0xff800000);
        #pragma unroll 4
        for (long long q = threadIdx.x; q < X1; q += blockDim.x) { float v = x[p * X1 + q]; if (v > acc) acc = v; }
        const float mx = block_max(acc, sh);
        float sum = 0;
        #pragma unroll 4
        for (long long q = threadIdx.x; q < X1; q += blockDim.x) { float e = expf(x[p * X1 + q] - mx); out[p * X1 + q] = e; sum += e; }
        const float tot = block_sum(sum, sh);
        #pragma unroll 4
        for (long long q = threadIdx.x; q < X1; q += blockDim.x) out[p * X1 + q] = out[p * X1 + q] / tot;
    }
}
extern "C" __global__ void copyk(float* __restrict__ o, const float* __restrict__ i, long long n) {
  for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < n; p += (long long)gridDim.x * blockDim.x) o[p] = i[p];
}

extern "C" __global__ void blkv(float* __restrict__ out, const float* __restrict__ x, long long X0, long long X1) {
    __shared__ float sh[32];
    const long long m4 = X1 >> 2;
    for (long long p = blockIdx.x; p < X0; p += gridDim.x) {
        const float4* row = (const float4*)(x + p * X1);
        float4* orow = (float4*)(out + p * X1);
        float acc = __int_as_float(0xff800000);
        #pragma unroll 4
        for (long long q = threadIdx.x; q < m4; q += blockDim.x) { float4 v = row[q]; acc = fmaxf(acc, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w))); }
        const float mx = block_max(acc, sh);
        float sum = 0;
        #pragma unroll 4
        for (long long q = threadIdx.x; q < m4; q += blockDim.x) { float4 v = row[q]; sum += expf(v.x - mx); sum += expf(v.y - mx); sum += expf(v.z - mx); sum += expf(v.w - mx); }
        const float tot = block_sum(sum, sh);
        #pragma unroll 4
        for (long long q = threadIdx.x; q < m4; q += blockDim.x) { float4 v = row[q]; float4 o; o.x = expf(v.x - mx) / tot; o.y = expf(v.y - mx) / tot; o.z = expf(v.z - mx) / tot; o.w = expf(v.w - mx) / tot; orow[q] = o; }
    }
}
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("err %s line %d\n", cudaGetErrorString(e), __LINE__); return 1; } } while (0)
int main(int argc, char** argv) {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  printf("%d SMs\n", sms);
  long long shapes[][2] = {{4096,4096},{1024,16384},{8192,2048},{16384,1024},{65536,256}};
  cudaFuncSetAttribute(blks, cudaFuncAttributeMaxDynamicSharedMemorySize, 200*1024);
  cudaFuncSetAttribute(warps, cudaFuncAttributeMaxDynamicSharedMemorySize, 200*1024);
  int count = 0;
  for (auto& sh : shapes) {
    if (argc > 1 && count++ > 0) break;
    long long R = sh[0], C = sh[1], n = R*C;
    float *x, *y, *y2; CK(cudaMalloc(&x, n*4)); CK(cudaMalloc(&y, n*4)); CK(cudaMalloc(&y2, n*4));
    std::vector<float> h(n); for (long long i = 0; i < n; i++) h[i] = (float)((i*2654435761ull) % 1000) / 100.0f - 5.0f;
    CK(cudaMemcpy(x, h.data(), n*4, cudaMemcpyHostToDevice));
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    auto time = [&](auto f) { f(); cudaDeviceSynchronize(); std::vector<float> ts; for (int r = 0; r < 21; r++) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms);} std::sort(ts.begin(), ts.end()); return ts[10]; };
    float tcopy = time([&]{ cudaMemcpyAsync(y2, x, n*4, cudaMemcpyDeviceToDevice); });
    long long g = std::min(R, (long long)sms*32);
    long long gw = std::min((R + 7) / 8, (long long)sms*32);
    time([&]{ copyk<<<sms*32, 256>>>(y2, x, n); });
    float tb = time([&]{ blk_t<long long, 4><<<g, 256>>>(y, x, R, C); });
    std::vector<float> r1(n), r2(n); CK(cudaMemcpy(r1.data(), y, n*4, cudaMemcpyDeviceToHost));
    float tw = time([&]{ warp<<<gw, 256>>>(y, x, R, C); });
    auto diff = [&]() { CK(cudaGetLastError()); CK(cudaMemcpy(r2.data(), y, n*4, cudaMemcpyDeviceToHost)); double md = 0; for (long long i = 0; i < n; i++) md = std::max(md, (double)fabsf(r1[i]-r2[i])); return md < 1e-6 ? 0 : 1; };
    int bad = diff();
    printf("R=%5lld C=%5lld memcpy %.4f ms  block %.4f ms (%.2fx)  warp %.4f ms (%.2fx)%s\n", R, C, tcopy, tb, tcopy/tb, tw, tcopy/tw, bad ? " WRONG" : "");
    auto rep = [&](const char* nm, float t) { int b = diff(); printf("   %-10s %.4f ms (%.2fx)%s\n", nm, t, tcopy/t, b ? " WRONG" : ""); };
    rep("blkv", time([&]{ blkv<<<g, 256>>>(y, x, R, C); }));
    rep("blk512", time([&]{ blk_t<long long, 4><<<g, 512>>>(y, x, R, C); }));
    rep("blk1024", time([&]{ blk_t<long long, 4><<<g, 1024>>>(y, x, R, C); }));
    rep("blk32", time([&]{ blk_t<int, 4><<<g, 256>>>(y, x, R, C); }));
    rep("blku8", time([&]{ blk_t<long long, 8><<<g, 256>>>(y, x, R, C); }));
    rep("blkst", time([&]{ blkst<<<g, 256>>>(y, x, R, C); }));
    if (C*4 <= 200*1024) rep("blk_smem", time([&]{ blks<<<g, 256, C*4>>>(y, x, R, C); }));
    if (C*4*8 <= 200*1024) rep("warp_smem", time([&]{ warps<<<gw, 256, C*4*8>>>(y, x, R, C); }));
    if (C <= 256*4) rep("regs4", time([&]{ regs<4><<<g, 256>>>(y, x, R, C); }));
    if (C <= 256*8) rep("regs8", time([&]{ regs<8><<<g, 256>>>(y, x, R, C); }));
    if (C <= 256*16) rep("regs16", time([&]{ regs<16><<<g, 256>>>(y, x, R, C); }));
    if (C <= 32*8) rep("wregs8", time([&]{ wregs<8><<<gw, 256>>>(y, x, R, C); }));
    if (C <= 32*32) rep("wregs32", time([&]{ wregs<32><<<gw, 256>>>(y, x, R, C); }));
    if (C <= 32*64) rep("wregs64", time([&]{ wregs<64><<<gw, 256>>>(y, x, R, C); }));
    cudaFree(x); cudaFree(y); cudaFree(y2);
  }
  return 0;
}
