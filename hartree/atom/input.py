"""Reader for the CUDAProphet/DFRATOM input format (thesis §3.5).

Line 1 is a title; then Fortran-namelist-like groups ``$name key=value ... $end`` (or
``&name ... /``), in the order $contrl $nuc $bas [$wtbs] [$newuoa] $econfig $scf.  With
``bastype='rdin'`` the lines after $bas give, per symmetry, the number of functions and
then one exponent per line.  Lists are comma or blank separated; strings may be quoted;
logicals are .true./.false.; Fortran exponents (1.0d-5) are accepted; ``!`` starts a
comment.  Symmetry arrays (nbs, start, groups, nclose, nopen, freeel) run over the κ
symmetries s1/2, p1/2, p3/2, d3/2, d5/2, f5/2, f7/2 (nsym of them).  Where the two κ of one
l have the same nbs, start and groups (or list the same rdin exponents) they share one set of
exponents; otherwise each κ symmetry gets its own window (exponents per κ, as in the thesis).

Extensions: $contrl ``relativistic=.false.`` (the c -> ∞ limit) and ``device='gpu'``
('auto', 'cpu', 'gpu': where the two-electron part runs); $nuc ``mass`` (mass
number); $wtbs ``npool`` (pool size per group; default: largest window end).
Every error names the line and the key.
"""

import math
import re
from dataclasses import dataclass, field

from ..device.selection import DEVICES
from ..errors import InputError
from ..io.files import read_text
from .angular import blocks_for
from .nucleus import make_nucleus
from .operators import block_exponents
from .options import DEFAULT_LIGHT_SPEED, AtomSCFOptions
from .wtbs import MAX_POOL, Window, WTBSParameters, wtbs_exponents

KNOWN_KEYS = {
    "contrl": ("jobtype", "c", "relativistic", "device"),
    "nuc": ("znuc", "nucmdl", "rnuc", "alpha", "mass"),
    "bas": ("nsym", "bastype", "ngroup"),
    "wtbs": ("wtbspara", "nbs", "start", "groups", "npool"),
    "newuoa": ("rhobeg", "rhoend", "iprint", "maxfun"),
    "econfig": ("nclose", "nopen", "freeel", "autogen", "nconf"),
    "scf": ("maxitr", "ixtrp", "dfctr", "thdll", "thdsl", "thdss"),
}
NUCLEAR_MODELS = {1: "point", 2: "sphere", 3: "gaussian"}


@dataclass
class AtomInput:
    """A parsed input file: everything a run needs."""

    title: str
    jobtype: str
    z: int
    nucleus: object
    exponents: list  # per l
    block_shells: list  # closed shells per κ (or l) block
    options: AtomSCFOptions
    wtbs: list = field(default_factory=list)  # WTBSParameters per group
    windows: list = field(default_factory=list)  # Window per l
    newuoa: dict = field(default_factory=dict)
    optimization: object = None  # OptimizationResult after a bsopt run
    open_shells: list = field(default_factory=list)  # open-shell electrons per block (0: none)
    pool_sizes: list = None  # npool per group (None: largest window ends)
    configurations: list = field(default_factory=list)  # autogen/nconf: (block_shells, open_shells, weight, label)


@dataclass
class _Group:
    name: str
    line: int
    values: dict  # key -> (list of tokens, line)


def _strip(line):
    return line.split("!", 1)[0].rstrip()


def _tokens(text):
    out = []
    for tok in re.findall(r"'[^']*'|\"[^\"]*\"|[^,\s]+", text):
        out.append(tok.strip("'\""))
    return out


def _read_group(lines, i, path):
    """Parse the group starting at lines[i]; returns (_Group, next index)."""
    lineno, text = lines[i]
    m = re.match(r"\s*[$&](\w+)(.*)", text)
    name = m.group(1).lower()
    if name not in KNOWN_KEYS:
        raise InputError(
            f"{path}:{lineno}: unknown group '${name}' (known: " + ", ".join("$" + k for k in KNOWN_KEYS) + ")"
        )
    body, rest, j = [], m.group(2), i
    while True:
        end = re.search(r"[$&]end\b|/\s*$", rest, flags=re.IGNORECASE)
        if end:
            body.append((lines[j][0], rest[: end.start()]))
            break
        body.append((lines[j][0], rest))
        j += 1
        if j >= len(lines):
            raise InputError(f"{path}:{lineno}: group ${name} is not closed with $end")
        rest = lines[j][1]
    values = {}
    key = None
    for ln, chunk in body:
        for part in re.split(r"(\b\w+\s*=)", chunk):
            if re.fullmatch(r"\b\w+\s*=", part):
                key = part[:-1].strip().lower()
                if key not in KNOWN_KEYS[name]:
                    raise InputError(
                        f"{path}:{ln}: unknown keyword '{key}' in group ${name} (known: "
                        + ", ".join(KNOWN_KEYS[name])
                        + ")"
                    )
                values[key] = ([], ln)
            elif part.strip():
                if key is None:
                    raise InputError(f"{path}:{ln}: '{part.strip()}' in group ${name} is not a key=value pair")
                values[key][0].extend(_tokens(part))
    return _Group(name, lineno, values), j + 1


def _number(group, key, path, kind=float, default=None, many=False):
    """The value(s) of ``key``: finite numbers (Fortran 'D' exponents allowed), integers
    below 2**31 for kind=int; InputError naming the line otherwise."""
    if key not in group.values:
        if default is None:
            raise InputError(f"{path}:{group.line}: group ${group.name} needs the key '{key}'")
        return default
    toks, ln = group.values[key]
    try:
        floats = [float(t.lower().replace("d", "e")) for t in toks]
    except ValueError:
        raise InputError(f"{path}:{ln}: key '{key}' needs numbers, got '{' '.join(toks)}'") from None
    if not all(math.isfinite(v) for v in floats):
        raise InputError(f"{path}:{ln}: key '{key}' needs finite numbers, got '{' '.join(toks)}'")
    if kind is int:
        if any(v != int(v) or abs(v) >= 2**31 for v in floats):
            raise InputError(f"{path}:{ln}: key '{key}' needs integers, got '{' '.join(toks)}'")
        vals = [int(v) for v in floats]
    else:
        vals = floats
    if not vals:
        raise InputError(f"{path}:{ln}: key '{key}' has no value")
    return vals if many else vals[0]


def _text(group, key, default):
    if key not in group.values:
        return default
    return " ".join(group.values[key][0]).lower()


def _logical(group, key, default):
    t = _text(group, key, None)
    if t is None:
        return default
    return t.strip(".").startswith("t")


def read_input(path):
    """Parse an input file into an :class:`AtomInput` (InputError names line and key)."""
    path = str(path)
    raw = read_text(path, "input file").splitlines()
    return parse_input(raw, path)


def parse_input(raw_lines, path="<input>"):
    """Parse the lines of an input file (see module docstring)."""
    lines = [(n + 1, _strip(t)) for n, t in enumerate(raw_lines)]
    if not lines:
        raise InputError(f"{path}: the input file is empty")
    title = lines[0][1].strip()
    body = [(n, t) for n, t in lines[1:] if t.strip()]
    groups, rdin_lines, conf_lines = {}, [], []
    i = 0
    while i < len(body):
        n, t = body[i]
        if re.match(r"\s*[$&]\w+", t):
            g, i = _read_group(body, i, path)
            if g.name in groups:
                raise InputError(f"{path}:{g.line}: group ${g.name} appears twice")
            groups[g.name] = g
        elif "bas" in groups and not set(groups) & {"wtbs", "newuoa", "econfig", "scf"}:
            rdin_lines.append((n, t.strip()))
            i += 1
        elif "econfig" in groups and "scf" not in groups:
            conf_lines.append((n, t.strip()))
            i += 1
        else:
            raise InputError(f"{path}:{n}: expected a group such as $scf, found '{t.strip()}'")
    for needed in ("contrl", "nuc", "bas", "econfig"):
        if needed not in groups:
            raise InputError(f"{path}: missing group ${needed}")
    contrl, nuc, bas, econ = groups["contrl"], groups["nuc"], groups["bas"], groups["econfig"]
    jobtype = _text(contrl, "jobtype", "energy")
    if jobtype not in ("energy", "bsopt"):
        raise InputError(f"{path}:{contrl.values['jobtype'][1]}: jobtype must be 'energy' or 'bsopt', got '{jobtype}'")
    light = _number(contrl, "c", path, default=DEFAULT_LIGHT_SPEED)
    relativistic = _logical(contrl, "relativistic", True)
    z = _number(nuc, "znuc", path, kind=int)
    if not 1 <= z <= 118:
        raise InputError(f"{path}:{nuc.values['znuc'][1]}: znuc must be an atomic number in 1..118, got {z}")
    model_id = _number(nuc, "nucmdl", path, kind=int, default=1)
    if model_id not in NUCLEAR_MODELS:
        raise InputError(f"{path}:{nuc.values['nucmdl'][1]}: nucmdl must be 1 (point), 2 (sphere) or 3 (gaussian)")
    model = NUCLEAR_MODELS[model_id]
    size = None
    if model == "gaussian" and "alpha" in nuc.values:
        size = _number(nuc, "alpha", path)
    if model == "sphere" and "rnuc" in nuc.values:
        size = _number(nuc, "rnuc", path)
    mass = _number(nuc, "mass", path, kind=int, default=0) or None
    nucleus = make_nucleus(z, model, mass_number=mass, parameter=size)

    nsym = _number(bas, "nsym", path, kind=int)
    if nsym not in (1, 3, 5, 7, 9):
        raise InputError(
            f"{path}:{bas.values['nsym'][1]}: nsym must be 1, 3, 5, 7 or 9 "
            f"(s1/2 and both κ of each further l), got {nsym}"
        )
    lmax = (nsym - 1) // 2
    kblocks = blocks_for(lmax, True)
    bastype = _text(bas, "bastype", "wtbs")
    wt, windows, exponents, pools = [], [], [], None
    if bastype == "wtbs":
        if "wtbs" not in groups:
            raise InputError(f"{path}: missing group $wtbs (needed because bastype='wtbs')")
        w = groups["wtbs"]
        ngroup = _number(bas, "ngroup", path, kind=int, default=1)
        para = _number(w, "wtbspara", path, many=True)
        if len(para) != 4 * ngroup:
            raise InputError(
                f"{path}:{w.values['wtbspara'][1]}: wtbspara needs 4 numbers per group "
                f"(alpha, beta, delta, gamma) for ngroup={ngroup}, got {len(para)}"
            )
        wt = [
            WTBSParameters(alpha=para[4 * g], beta=para[4 * g + 1], delta=para[4 * g + 2], gamma=para[4 * g + 3])
            for g in range(ngroup)
        ]
        nbs = _sym_array(w, "nbs", path, nsym, None)
        start = _sym_array(w, "start", path, nsym, 1)
        grp = _sym_array(w, "groups", path, nsym, 1)
        pools = _number(w, "npool", path, kind=int, default=0, many=True) or None
        if pools is not None and len(pools) != ngroup:
            raise InputError(f"{path}:{w.values['npool'][1]}: npool needs one size per group ({ngroup})")
        for l in range(lmax + 1):
            idx = [i for i, b in enumerate(kblocks) if b.l == l]
            shared = all(len({arr[i] for i in idx}) == 1 for arr in (nbs, start, grp))
            if not shared and not relativistic:
                key = next(
                    k for k, arr in (("nbs", nbs), ("start", start), ("groups", grp)) if len({arr[i] for i in idx}) > 1
                )
                raise InputError(
                    f"{path}:{w.values[key][1]}: '{key}' differs between the two κ symmetries "
                    f"of l={l}; relativistic=.false. needs one window per l"
                )
            for i in idx[:1] if shared else idx:
                if nbs[i] < 1:
                    raise InputError(f"{path}:{w.values['nbs'][1]}: nbs of {kblocks[i].label} must be at least 1")
                if not 1 <= grp[i] <= ngroup:
                    raise InputError(
                        f"{path}:{w.values['groups'][1]}: symmetry {kblocks[i].label} uses group "
                        f"{grp[i]} but ngroup={ngroup}"
                    )
                try:  # both κ of l share one window, or (they differ) each κ has its own
                    windows.append(
                        Window(l, start[i], start[i] + nbs[i] - 1, grp[i] - 1, 0 if shared else kblocks[i].kappa)
                    )
                except InputError as exc:
                    raise InputError(f"{path}:{w.values.get('start', w.values['nbs'])[1]}: {exc}") from None
        try:
            exponents = wtbs_exponents(wt, windows, pools)
        except InputError as exc:
            where = w.values["npool"][1] if "npool" in w.values else w.line
            raise InputError(f"{path}:{where}: {exc} (keys nbs, start, npool of $wtbs)") from None
    elif bastype == "rdin":
        exponents = _read_rdin(rdin_lines, nsym, kblocks, path, bas.line)
        split = [l for l, e in enumerate(exponents) if isinstance(e, tuple)]
        if split and not relativistic:
            raise InputError(
                f"{path}:{bas.line}: the two κ symmetries of l={split[0]} list different rdin "
                f"exponents; relativistic=.false. needs one set per l"
            )
    else:
        raise InputError(f"{path}:{bas.values['bastype'][1]}: bastype must be 'wtbs' or 'rdin', got '{bastype}'")
    newuoa = {}
    if jobtype == "bsopt":
        if bastype != "wtbs":
            raise InputError(f"{path}: jobtype='bsopt' needs bastype='wtbs'")
        if "newuoa" not in groups:
            raise InputError(f"{path}: missing group $newuoa (needed because jobtype='bsopt')")
        g = groups["newuoa"]
        newuoa = {
            "rhobeg": _number(g, "rhobeg", path, default=0.1),
            "rhoend": _number(g, "rhoend", path, default=1e-4),
            "iprint": _number(g, "iprint", path, kind=int, default=0),
            "maxfun": _number(g, "maxfun", path, kind=int, default=500),
        }
    nclose = _sym_array(econ, "nclose", path, nsym, None)
    nopen = _sym_array(econ, "nopen", path, nsym, 0)
    freeel = _sym_array_float(econ, "freeel", path, nsym, 0.0)
    autogen = _logical(econ, "autogen", False)
    nconf = _number(econ, "nconf", path, kind=int, default=0)
    if autogen and nconf:
        raise InputError(f"{path}:{econ.line}: give either autogen=.true. or nconf (with its lines), not both")
    if conf_lines and not nconf:
        raise InputError(f"{path}:{conf_lines[0][0]}: numbers after $econfig need nconf (configurations to read)")
    nfun = [len(e) for e in block_exponents(exponents, True)[1]]  # functions per κ symmetry
    for i, b in enumerate(kblocks):
        if nclose[i] < 0:
            raise InputError(f"{path}:{econ.values['nclose'][1]}: nclose of {b.label} is negative")
        if nopen[i] not in (0, 1):
            raise InputError(
                f"{path}:{econ.values['nopen'][1]}: nopen of {b.label} must be 0 or 1 (one open shell per symmetry)"
            )
        if nopen[i] and not 0 < freeel[i] <= b.degeneracy:
            raise InputError(
                f"{path}:{econ.values.get('freeel', econ.values['nopen'])[1]}: freeel of "
                f"{b.label} must be in (0, {b.degeneracy}] for its open shell"
            )
        if not nopen[i] and freeel[i]:
            raise InputError(f"{path}:{econ.values['freeel'][1]}: freeel of {b.label} needs nopen=1")
        if nclose[i] + nopen[i] > nfun[i]:
            raise InputError(
                f"{path}:{econ.values['nclose'][1]}: more electrons than spinors in {b.label}: "
                f"{nclose[i] + nopen[i]} occupied shells but only {nfun[i]} basis functions"
            )
    electrons = sum(n * b.degeneracy + f for n, f, b in zip(nclose, freeel, kblocks))
    if electrons > 2 * z + 2:
        raise InputError(
            f"{path}:{econ.values['nclose'][1]}: nclose/freeel put {electrons:g} electrons on a nucleus of charge {z}"
        )
    open_shells = [f if o else 0.0 for o, f in zip(nopen, freeel)]
    configurations = []
    if nconf:
        configurations = _read_configurations(conf_lines, nconf, nclose, kblocks, path, econ)
    elif autogen:
        if not relativistic:
            raise InputError(
                f"{path}:{econ.values['autogen'][1]}: autogen splits nl shells into j = l±1/2; "
                f"it needs relativistic=.true."
            )
        from .config import jj_configurations

        charge = z - sum(n * b.degeneracy + f for n, f, b in zip(nclose, freeel, kblocks))
        configurations = [
            ([n for n, _ in pat][:nsym], [q for _, q in pat][:nsym], w, label)
            for pat, w, label in jj_configurations(z, int(round(charge)))
        ]
    if relativistic:
        block_shells = list(nclose)
    else:
        if any(open_shells):
            raise InputError(
                f"{path}:{econ.line}: relativistic=.false. with open shells: use the command "
                f"line (hartree atom X --nonrelativistic) or the Python API"
            )
        block_shells = []
        for l in range(lmax + 1):
            vals = {nclose[i] for i, b in enumerate(kblocks) if b.l == l}
            if len(vals) > 1:
                raise InputError(
                    f"{path}:{econ.values['nclose'][1]}: relativistic=.false. needs equal nclose for both κ of l={l}"
                )
            block_shells.append(vals.pop())
        open_shells = [0.0] * len(block_shells)
    scf_kw = {}
    if "scf" in groups:
        g = groups["scf"]
        scf_kw = {
            "max_iterations": _number(g, "maxitr", path, kind=int, default=100),
            "damping": _number(g, "dfctr", path, default=0.3),
            "thdll": _number(g, "thdll", path, default=1e-5),
            "thdsl": _number(g, "thdsl", path, default=1e-7),
            "thdss": _number(g, "thdss", path, default=1e-9),
        }
        ixtrp = _number(g, "ixtrp", path, kind=int, default=1)
        scf_kw["diis"] = ixtrp != 0  # 0: damping with dfctr only; 1: DIIS extrapolation of F
    device = _text(contrl, "device", "auto")
    if device not in DEVICES:
        raise InputError(f"{path}:{contrl.values['device'][1]}: device must be 'auto', 'cpu' or 'gpu', got '{device}'")
    options = AtomSCFOptions(light_speed=light, relativistic=relativistic, device=device, **scf_kw)
    return AtomInput(
        title,
        jobtype,
        z,
        nucleus,
        exponents,
        block_shells,
        options,
        wt,
        windows,
        newuoa,
        open_shells=open_shells,
        pool_sizes=pools,
        configurations=configurations,
    )


def _read_configurations(lines, nconf, nclose, kblocks, path, econ):
    """nconf lines after $econfig, each with one number per κ symmetry: the electrons above
    the nclose closed shells of that symmetry (0 < q < 2j+1: one open shell; q = 2j+1: one
    more closed shell).  Weights are equal (1/nconf).  Returns [(closed, open, weight, label)]."""
    rows = []
    for n, t in lines:
        try:
            rows.append((n, [float(x.lower().replace("d", "e")) for x in t.replace(",", " ").split()]))
        except ValueError:
            raise InputError(f"{path}:{n}: a configuration line needs numbers (electrons per symmetry)") from None
    if len(rows) != nconf:
        raise InputError(
            f"{path}:{econ.values['nconf'][1]}: nconf={nconf} but {len(rows)} configuration line(s) follow $econfig"
        )
    out = []
    for n, vals in rows:
        if len(vals) != len(kblocks):
            raise InputError(f"{path}:{n}: a configuration needs {len(kblocks)} numbers (nsym), got {len(vals)}")
        closed, opened, parts = [], [], []
        for b, nc, q in zip(kblocks, nclose, vals):
            if not 0 <= q <= b.degeneracy:
                raise InputError(f"{path}:{n}: {q:g} electrons do not fit one {b.label} shell (at most {b.degeneracy})")
            full = q == b.degeneracy
            closed.append(nc + int(full))
            opened.append(0.0 if full else q)
            if q:
                parts.append(f"{b.label}^{q:g}")
        out.append((closed, opened, 1.0 / nconf, " ".join(parts) or "closed shells"))
    return out


def _sym_array(group, key, path, nsym, default):
    if key not in group.values:
        if default is None:
            raise InputError(f"{path}:{group.line}: group ${group.name} needs the key '{key}'")
        return [default] * nsym
    vals = _number(group, key, path, kind=int, many=True)
    if len(vals) != nsym:
        raise InputError(f"{path}:{group.values[key][1]}: key '{key}' needs {nsym} values (nsym), got {len(vals)}")
    return vals


def _sym_array_float(group, key, path, nsym, default):
    if key not in group.values:
        return [default] * nsym
    vals = _number(group, key, path, many=True)
    if len(vals) != nsym:
        raise InputError(f"{path}:{group.values[key][1]}: key '{key}' needs {nsym} values (nsym), got {len(vals)}")
    return [float(v) for v in vals]


def _read_rdin(lines, nsym, kblocks, path, bas_line):
    """Explicit exponents after $bas: per κ symmetry a count, then that many exponents."""
    vals, pos = [], 0
    for n, t in lines:
        for tok in t.replace(",", " ").split():
            try:
                value = float(tok.lower().replace("d", "e"))
            except ValueError:
                raise InputError(f"{path}:{n}: '{tok}' is not a number (rdin exponents)") from None
            if not math.isfinite(value):
                raise InputError(f"{path}:{n}: '{tok}' is not a finite number (rdin exponents)")
            vals.append((n, value))
    per_block = []
    for b in kblocks:
        if pos >= len(vals):
            raise InputError(f"{path}:{bas_line}: bastype='rdin' but no exponents follow for {b.label}")
        n, count = vals[pos]
        if count != int(count) or not 1 <= count <= MAX_POOL:
            raise InputError(f"{path}:{n}: number of {b.label} functions must be an integer in 1..{MAX_POOL}")
        chunk = vals[pos + 1 : pos + 1 + int(count)]
        if len(chunk) < count:
            raise InputError(f"{path}:{n}: {b.label} announces {int(count)} exponents, only {len(chunk)} follow")
        if any(v <= 0 for _, v in chunk):
            raise InputError(f"{path}:{n}: exponents of {b.label} must be positive")
        per_block.append([v for _, v in chunk])
        pos += 1 + int(count)
    if pos != len(vals):
        raise InputError(f"{path}:{vals[pos][0]}: extra numbers after the {nsym} rdin symmetries")
    exps = []
    for l in range(kblocks[-1].l + 1):
        sets = [per_block[i] for i, b in enumerate(kblocks) if b.l == l]
        # the two κ of l share their exponents when they list the same ones, else a pair (j = l-1/2, l+1/2)
        exps.append(sets[0] if all(s == sets[0] for s in sets) else (sets[0], sets[1]))
    return exps
