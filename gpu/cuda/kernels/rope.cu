#include "common.cuh"

// Rotates x (N, H, HS) in place: pairs (i, i+HS/2) of token n by angle
// sign * pos[n] * theta^(-2i/HS), the angle computed in double.
extern "C" __global__ void rope(float* x, const int* pos, int N, int H, int HS, float theta, float sign) {
    int half = HS / 2;
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long)N * H * half) return;
    int i = idx % half;
    long nh = idx / half;
    int n = nh / H;
    double ang = (double)pos[n] * pow((double)theta, -2.0 * i / HS);
    float c = (float)cos(ang), s = sign * (float)sin(ang);
    float* v = x + nh * HS;
    float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = a * s + b * c;
}
