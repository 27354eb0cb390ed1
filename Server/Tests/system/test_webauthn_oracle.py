"""py_webauthn (an independent relying-party implementation) verifies what `latchkey authenticator` produces.

The software authenticator reads W3C options JSON on stdin and prints W3C response JSON, so py_webauthn's own option
generator and verifiers are the oracle: registration (`none` and `packed` self-attestation), then authentication with
the public key and sign count py_webauthn stored, and a tampered signature that must be refused.
"""
import base64
import json
import os
import subprocess

import pytest
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers.exceptions import InvalidAuthenticationResponse
from webauthn.helpers.structs import (
    AttestationConveyancePreference,
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from conftest import BINARY

RP_ID = "localhost"
ORIGIN = "http://localhost:8090"


def authenticator(args, stdin, key_store):
    result = subprocess.run([BINARY, "authenticator", *args, "--origin", ORIGIN, "--key-store", key_store],
                            input=stdin.encode(), capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    return json.loads(result.stdout)


def b64url_decode(value):
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))


def register(key_store, attestation):
    options = generate_registration_options(
        rp_id=RP_ID, rp_name="Latchkey oracle", user_name="ada@example.com", user_id=b"user-ada", user_display_name="Ada",
        attestation=AttestationConveyancePreference.DIRECT if attestation == "packed" else AttestationConveyancePreference.NONE,
        authenticator_selection=AuthenticatorSelectionCriteria(resident_key=ResidentKeyRequirement.REQUIRED,
                                                               user_verification=UserVerificationRequirement.REQUIRED))
    response = authenticator(["create", "--attestation", attestation], options_to_json(options), key_store)
    verified = verify_registration_response(credential=response, expected_challenge=options.challenge, expected_rp_id=RP_ID,
                                            expected_origin=ORIGIN, require_user_verification=True)
    return response, verified


def authenticate(key_store, credential_id=None):
    allow = [PublicKeyCredentialDescriptor(id=credential_id)] if credential_id else None
    options = generate_authentication_options(rp_id=RP_ID, allow_credentials=allow,
                                              user_verification=UserVerificationRequirement.REQUIRED)
    return options, authenticator(["get"], options_to_json(options), key_store)


@pytest.mark.parametrize("attestation", ["none", "packed"])
def test_registration_then_authentication_verify(tmp_path, attestation):
    key_store = str(tmp_path / "passkeys.json")
    response, verified = register(key_store, attestation)
    assert getattr(verified.fmt, "value", verified.fmt) == attestation
    assert verified.credential_id == b64url_decode(response["id"])
    assert verified.sign_count == 0
    assert verified.user_verified
    assert response["type"] == "public-key" and response["clientExtensionResults"] == {}
    assert response["response"]["transports"] == ["internal"]
    assert oct(os.stat(key_store).st_mode & 0o777) == "0o600"

    sign_count = verified.sign_count
    for expected_count in (1, 2):
        # Discoverable the first time (no allow list), username-first the second.
        options, assertion = authenticate(key_store, verified.credential_id if expected_count == 2 else None)
        assert assertion["id"] == response["id"]
        assert b64url_decode(assertion["response"]["userHandle"]) == b"user-ada"
        result = verify_authentication_response(
            credential=assertion, expected_challenge=options.challenge, expected_rp_id=RP_ID, expected_origin=ORIGIN,
            credential_public_key=verified.credential_public_key, credential_current_sign_count=sign_count,
            require_user_verification=True)
        assert result.new_sign_count == expected_count
        sign_count = result.new_sign_count


def test_tampered_signature_is_rejected(tmp_path):
    key_store = str(tmp_path / "passkeys.json")
    _, verified = register(key_store, "none")
    options, assertion = authenticate(key_store)
    signature = bytearray(b64url_decode(assertion["response"]["signature"]))
    signature[-1] ^= 0x01
    assertion["response"]["signature"] = base64.urlsafe_b64encode(bytes(signature)).decode().rstrip("=")
    with pytest.raises(InvalidAuthenticationResponse):
        verify_authentication_response(
            credential=assertion, expected_challenge=options.challenge, expected_rp_id=RP_ID, expected_origin=ORIGIN,
            credential_public_key=verified.credential_public_key, credential_current_sign_count=0)


def test_excluded_credential_is_not_registered_twice(tmp_path):
    key_store = str(tmp_path / "passkeys.json")
    _, verified = register(key_store, "none")
    options = generate_registration_options(rp_id=RP_ID, rp_name="Latchkey oracle", user_name="ada@example.com", user_id=b"user-ada",
                                            exclude_credentials=[PublicKeyCredentialDescriptor(id=verified.credential_id)])
    result = subprocess.run([BINARY, "authenticator", "create", "--origin", ORIGIN, "--key-store", key_store],
                            input=options_to_json(options).encode(), capture_output=True, timeout=60)
    assert result.returncode == 1
    assert "already" in result.stderr.decode()
