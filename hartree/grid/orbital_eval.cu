extern "C" __global__ void {name}({params})
{{
  const int t = blockIdx.x;
  REAL px[PPT], py[PPT], pz[PPT];         // points minus the tile reference point, bohr
  long long local[PPT];                   // index of each point in the slab (C order)
  bool live[PPT];
  if (mode == 0) {{
    const int tz = t % nt2, ty = (t / nt2) % nt1, tx = t / (nt2 * nt1);
    const int lz = threadIdx.x % TZ, ly = (threadIdx.x / TZ) % TY, lx = threadIdx.x / (TZ * TY);
    const int j = ty * TY + ly, k = tz * TZ + lz;
    _Pragma("unroll") for (int P = 0; P < PPT; ++P) {{
      const int ix = P * TX + lx, i = tx * BX + ix;
      live[P] = i < n0 && j < n1 && k < n2;
      px[P] = (REAL)(ix * lat[3] + ly * lat[6] + lz * lat[9]);
      py[P] = (REAL)(ix * lat[4] + ly * lat[7] + lz * lat[10]);
      pz[P] = (REAL)(ix * lat[5] + ly * lat[8] + lz * lat[11]);
      local[P] = ((long long)i * n1 + j) * n2 + k;
    }}
  }} else {{
    const int p0 = t * BTILE;
    _Pragma("unroll") for (int P = 0; P < PPT; ++P) {{
      const int p = p0 + threadIdx.x + P * TILE;
      live[P] = p < n0;
      const int q = live[P] ? p : p0;
      px[P] = (REAL)(points[3 * q] - points[3 * p0]);
      py[P] = (REAL)(points[3 * q + 1] - points[3 * p0 + 1]);
      pz[P] = (REAL)(points[3 * q + 2] - points[3 * p0 + 2]);
      local[P] = q;
    }}
  }}
  if (!live[0]) return;                   // later points of a thread lie further along: all dead
{acc_init}
  const int nent = count[t];
  const Entry* mine = list + (long long)t * natm;
  for (int n = 0; n < nent; ++n) {{
    const Entry e = mine[n];
    REAL x1[PPT], y1[PPT], z1[PPT], r2[PPT];
    REAL r2min = (REAL)1e30;
    _Pragma("unroll") for (int P = 0; P < PPT; ++P) {{
      x1[P] = px[P] - e.x; y1[P] = py[P] - e.y; z1[P] = pz[P] - e.z;
      r2[P] = x1[P] * x1[P] + y1[P] * y1[P] + z1[P] * z1[P];
      r2min = r2[P] < r2min ? r2[P] : r2min;
    }}
    const int a = e.atom;

{body}
  }}
{store}
}}
