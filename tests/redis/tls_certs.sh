#!/bin/sh
# Makes the certificates the TLS tests use, fresh in <folder> each run (no
# key is ever committed): EC P-256 keys, valid for two days.
#   ca.crt                   the CA the tests trust
#   server.crt, server.key   Redis's, for DNS localhost and IP 127.0.0.1
#   client.crt, client.key   compactd's, for a Redis that asks for one
#   other-ca.crt             a CA that signed nothing: trusting it alone fails
#   other-name.crt, .key     Redis's under the right CA but for redis.example only
#   localhost.crt, .key      Redis's for DNS localhost only (no address)
#   stranger.crt, .key       a client certificate of the other CA
#   client-encrypted.key     client.key under a passphrase
#   tls_certs.sh <folder>
set -eu
[ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: tls_certs.sh <existing folder>" >&2; exit 2; }
cd "$1"

key() {
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
}

ca() { # name subject
    key "$1.key"
    openssl req -x509 -new -key "$1.key" -sha256 -days 2 -subj "/CN=$2" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
        -out "$1.crt" 2>/dev/null
}

leaf() { # name ca subject usage [subjectAltName]
    key "$1.key"
    openssl req -new -key "$1.key" -subj "/CN=$3" -out "$1.csr" 2>/dev/null
    {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature"
        echo "extendedKeyUsage=$4"
        [ -z "${5:-}" ] || echo "subjectAltName=$5"
    } >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -sha256 \
        -days 2 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
    rm -f "$1.csr" "$1.ext"
}

ca ca "compactd test CA"
ca other-ca "compactd other CA"
leaf server ca "compactd test redis" serverAuth "DNS:localhost,IP:127.0.0.1"
leaf other-name ca "redis.example" serverAuth "DNS:redis.example"
leaf localhost ca "localhost" serverAuth "DNS:localhost"
leaf client ca "compactd" clientAuth
leaf stranger other-ca "stranger" clientAuth
openssl pkey -in client.key -aes256 -passout pass:secret -out client-encrypted.key 2>/dev/null
chmod 600 ./*.key
