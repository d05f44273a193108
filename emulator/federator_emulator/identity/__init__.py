"""An emulated Microsoft Entra ID tenant: the applications that sign in, the tokens the emulator
issues and verifies, and the Azure roles that authorize them (docs/emulator.md, "Microsoft Entra ID").

- ``keys``: the RSA key that signs every token, made once and kept in the data dir;
- ``directory``: applications, federated credentials and role assignments from the config;
- ``tokens``: access tokens and workload (federated) tokens, issued and verified;
- ``endpoint``: the OAuth2 token endpoint and OpenID discovery that ``azure-identity`` calls;
- ``management``: bearer tokens on the management plane (ARM, DNS, ATOM).
"""
