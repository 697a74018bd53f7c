import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One rib secret, AES-256-GCM encrypted with its account as associated data. */
@Entity('rib_credentials')
export class StoredCredential {
  /** `rib_<ribId>_<serviceId>`. */
  @PrimaryColumn('text')
  account!: string;

  @Column('bytea')
  ciphertext!: Buffer;

  @Column('bytea')
  iv!: Buffer;

  @Column('bytea', { name: 'auth_tag' })
  authTag!: Buffer;

  /** Fingerprint of the key it was sealed with, so a wrong key is named rather than guessed at. */
  @Column('text', { name: 'key_id' })
  keyId!: string;

  @Column('timestamptz', { name: 'updated_at' })
  updatedAt!: Date;
}
