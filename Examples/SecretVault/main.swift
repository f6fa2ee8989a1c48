print("SecretVault")
