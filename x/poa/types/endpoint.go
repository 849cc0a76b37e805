package types

import (
	"crypto/ed25519"
	"net"
	"net/url"
	"strconv"

	errorsmod "cosmossdk.io/errors"
)

// MaxEndpointBytes bounds a data-plane endpoint: every node keeps one per validator.
const MaxEndpointBytes = 200

// ValidateEndpoint checks a data-plane endpoint: empty (none), or http(s)://host:port with a
// port from 1 to 65535 and nothing else (no path, query, fragment or credentials), so that
// peers build their request URLs from it alone.
func ValidateEndpoint(endpoint string) error {
	if endpoint == "" {
		return nil
	}
	if len(endpoint) > MaxEndpointBytes {
		return errorsmod.Wrapf(ErrInvalidEndpoint, "%d bytes, at most %d", len(endpoint), MaxEndpointBytes)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return errorsmod.Wrapf(ErrInvalidEndpoint, "%q: %v", endpoint, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errorsmod.Wrapf(ErrInvalidEndpoint, "%q: want http:// or https://", endpoint)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return errorsmod.Wrapf(ErrInvalidEndpoint, "%q: want scheme, host and port only", endpoint)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return errorsmod.Wrapf(ErrInvalidEndpoint, "%q: want host:port", endpoint)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return errorsmod.Wrapf(ErrInvalidEndpoint, "%q: port %q", endpoint, port)
	}
	return nil
}

// DataPlaneKeyBytes is the size of a data-plane key: an ed25519 public key.
const DataPlaneKeyBytes = 32

// dataPlaneKeyProofDomain begins what a data-plane key signs to show its operator holds it.
const dataPlaneKeyProofDomain = "bftlog/data-plane-key/v1\x00"

// DataPlaneKeyProofBytes is what an operator's data-plane key signs as its proof: the domain
// and the operator's address bytes (its account's and its bftlogvaloper...'s are the same).
func DataPlaneKeyProofBytes(operator []byte) []byte {
	return append([]byte(dataPlaneKeyProofDomain), operator...)
}

// ValidateDataPlaneKey checks a data-plane key and its proof: none at all, or an ed25519 public
// key of 32 bytes whose signature over DataPlaneKeyProofBytes(operator) is proof. A key without
// a proof could be one copied from another validator's message, which would then have that
// validator's node sign for the copier.
func ValidateDataPlaneKey(operator, key, proof []byte) error {
	if len(key) == 0 && len(proof) == 0 {
		return nil
	}
	if len(key) != DataPlaneKeyBytes {
		return errorsmod.Wrapf(ErrInvalidDataPlaneKey, "%d bytes, want an ed25519 public key of %d", len(key), DataPlaneKeyBytes)
	}
	if len(proof) != ed25519.SignatureSize || !ed25519.Verify(ed25519.PublicKey(key), DataPlaneKeyProofBytes(operator), proof) {
		return errorsmod.Wrap(ErrInvalidDataPlaneKey, "the proof is not this key's signature for this operator (bftlogd data-plane-key --operator prints both)")
	}
	return nil
}
