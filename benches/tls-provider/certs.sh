#!/bin/bash
# The certificates the bench embeds: an ECDSA P-256 CA and an ECDSA P-256
# leaf for `localhost` it signed, as DER (made here, never committed).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p certs && cd certs
openssl ecparam -name prime256v1 -genkey -noout -out ca.key
openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj /CN=bench-ca -out ca.pem
openssl ecparam -name prime256v1 -genkey -noout -out ee.key
openssl req -new -key ee.key -subj /CN=localhost -out ee.csr
printf 'subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n' > ee.ext
openssl x509 -req -in ee.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 -sha256 -extfile ee.ext -out ee.pem
openssl x509 -in ca.pem -outform DER -out ca.der
openssl x509 -in ee.pem -outform DER -out ee.der
openssl pkcs8 -topk8 -nocrypt -in ee.key -outform DER -out ee.key.der
