// One thread per tile: atoms whose screening sphere meets the tile's bounding box.
// A lattice tile is BX x TY x TZ points (each thread owns PPT points along x), a point tile BTILE points.
extern "C" __global__ void orb_screen({params})
{{
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= ntile) return;
  double lo[3], hi[3], ref[3];
  if (mode == 0) {{
    const int tz = t % nt2, ty = (t / nt2) % nt1, tx = t / (nt2 * nt1);
    const int i0 = tx * BX, j0 = ty * TY, k0 = tz * TZ;
    const int i1 = min(n0, i0 + BX) - 1, j1 = min(n1, j0 + TY) - 1, k1 = min(n2, k0 + TZ) - 1;
    for (int d = 0; d < 3; ++d) {{
      ref[d] = lat[d] + i0 * lat[3 + d] + j0 * lat[6 + d] + k0 * lat[9 + d];
      lo[d] = hi[d] = ref[d];
      for (int c = 1; c < 8; ++c) {{       // the eight corners of the brick
        const double v = lat[d] + ((c & 1) ? i1 : i0) * lat[3 + d] + ((c & 2) ? j1 : j0) * lat[6 + d]
                       + ((c & 4) ? k1 : k0) * lat[9 + d];
        lo[d] = fmin(lo[d], v); hi[d] = fmax(hi[d], v);
      }}
    }}
  }} else {{
    const int p0 = t * BTILE, p1 = min(n0, p0 + BTILE);
    for (int d = 0; d < 3; ++d) {{
      ref[d] = lo[d] = hi[d] = points[3 * p0 + d];
      for (int p = p0 + 1; p < p1; ++p) {{
        lo[d] = fmin(lo[d], points[3 * p + d]); hi[d] = fmax(hi[d], points[3 * p + d]);
      }}
    }}
  }}
  int n = 0;
  Entry* mine = list + (long long)t * natm;
  for (int a = 0; a < natm; ++a) {{
    double d2 = 0.0;
    for (int d = 0; d < 3; ++d) {{
      const double x = atom_xyz[3 * a + d];
      const double g = x < lo[d] ? lo[d] - x : (x > hi[d] ? x - hi[d] : 0.0);
      d2 += g * g;
    }}
    if (d2 <= atom_rcut2[a]) {{
      Entry e;
      e.x = (REAL)(atom_xyz[3 * a] - ref[0]);
      e.y = (REAL)(atom_xyz[3 * a + 1] - ref[1]);
      e.z = (REAL)(atom_xyz[3 * a + 2] - ref[2]);
      e.atom = a;
      mine[n++] = e;
    }}
  }}
  count[t] = n;
}}
