# Sourced by .ci/python.sh and .ci/serve.sh, with $python, $source and $name set: exits 77
# (CTest's skip), saying why, when Debian's python3 lacks a module the tests need; else makes
# $scratch/venv (removed at exit), which sees Debian's numpy, torch and pytest
# (--system-site-packages) and has the Python package installed with no network (--no-index:
# pip builds with the setuptools the venv sees; python/setup.py says why).

# module:Debian package (Debian's python3 has venv without ensurepip until python3-venv)
for need in ensurepip:python3-venv pip:python3-pip pytest:python3-pytest numpy:python3-numpy \
    setuptools:python3-setuptools; do
    if ! "$python" -c "import ${need%%:*}" 2> /dev/null; then
        echo "$name: skipped, $python has no ${need%%:*} (Debian: ${need#*:})"
        exit 77
    fi
done

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$python" -m venv --system-site-packages "$scratch/venv"
# A copy of the package: an in-tree build would leave build/ and *.egg-info in the source.
cp -r "$source/python" "$scratch/src"
"$scratch/venv/bin/pip" install --no-index --quiet "$scratch/src"
