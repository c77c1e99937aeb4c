# Sourced by scripts that add a Debian suite to a private apt state (benchmarks/device-matrix.sh,
# .ci/cross.sh): the main Debian archive as this machine's apt configuration names it, so that
# no script names a mirror and each uses whichever one the machine was set up with.

# The release's codename (bookworm), from /etc/os-release.
debian_codename() {
    (. /etc/os-release 2> /dev/null && echo "${VERSION_CODENAME:-}")
}

# Prints the URI of the first enabled `deb` source of suite $1 with the `main` component, read
# from $2 (default /etc/apt): sources.list and sources.list.d's one-line *.list files and deb822
# *.sources files (Types, URIs, Suites, Components, Enabled). When there is none, says so on
# stderr and fails.
debian_archive_uri() {
    local suite=$1 etc=${2:-/etc/apt} files=() f
    for f in "$etc/sources.list" "$etc"/sources.list.d/*.list "$etc"/sources.list.d/*.sources; do
        [ -f "$f" ] && files+=("$f")
    done
    [ "${#files[@]}" -gt 0 ] && archive_uri_in "$suite" "${files[@]}" && return 0
    echo "no deb source of the Debian archive's '${suite:-?}' main in $etc/sources.list," \
        "$etc/sources.list.d/*.list or *.sources" >&2
    return 1
}

# debian_archive_uri's reading of the files $2...
archive_uri_in() {
    local suite=$1
    shift
    awk -v suite="$suite" '
        function has(list, word,   n, w, i) {
            n = split(list, w)
            for (i = 1; i <= n; i++) if (w[i] == word) return 1
            return 0
        }
        function found(types, uri, suites, components) {
            if (uri == "" || uri ~ /^cdrom:/ || !has(types, "deb") || !has(suites, suite) ||
                !has(components, "main")) return 0
            sub(/\/+$/, "", uri)
            print uri
            done = 1
            exit
        }
        function stanza_end() {
            split(f["uris"], u)
            if (tolower(f["enabled"]) != "no") found(f["types"], u[1], f["suites"], f["components"])
            delete f
        }
        FNR == 1 { stanza_end() }
        FILENAME !~ /\.sources$/ {  # one line: deb [options] URI SUITE COMPONENT...
            sub(/#.*/, "")
            gsub(/\[[^]]*\]/, " ")
            n = split($0, w)
            c = ""
            for (i = 4; i <= n; i++) c = c " " w[i]
            if (n >= 4 && w[1] == "deb") found("deb", w[2], w[3], c)
            next
        }
        /^#/ { next }
        /^[ \t]*$/ { stanza_end(); next }
        /^[ \t]/ { next }  # a continuation line (a key block, say)
        {
            key = tolower($0); sub(/:.*/, "", key)
            value = $0; sub(/^[^:]*:[ \t]*/, "", value)
            f[key] = value
        }
        END { if (!done) stanza_end(); exit !done }
    ' "$@"
}
