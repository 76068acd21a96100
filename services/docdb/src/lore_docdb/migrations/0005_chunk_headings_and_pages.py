"""Each chunk records its heading path (a JSON array of section titles) and, for a paged file, the
first and last page it draws from.

Existing chunks get NULL: they were cut as fixed windows, with no section or page known; a re-parse of
their dataset (`force`) gives them both.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("chunks") as batch:
        batch.add_column(sa.Column("heading_path", sa.String(), nullable=True))
        batch.add_column(sa.Column("page_start", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("page_end", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chunks") as batch:
        batch.drop_column("page_end")
        batch.drop_column("page_start")
        batch.drop_column("heading_path")
