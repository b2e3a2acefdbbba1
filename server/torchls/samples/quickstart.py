"""torchls 演示文件：在编辑器里把鼠标悬停在任意 torch 符号上，就能看到中文卡片。"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torch.nn import CrossEntropyLoss


class Classifier(nn.Module):
    def __init__(self, in_features: int = 128, num_classes: int = 10) -> None:
        super().__init__()
        self.fc = nn.Linear(in_features, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(F.relu(x))  # 前向传播 🚀 self.fc 是一个 nn.Linear


model = Classifier()
optimizer = optim.AdamW(model.parameters(), lr=1e-3)
criterion = CrossEntropyLoss(reduction="mean")

x = torch.randn(32, 128)  # 输入：32 个样本
labels = torch.randint(0, 10, (32,))
print("形状：", x.shape, "展平：", x.view(32, -1).shape)  # 😀 中文和表情不影响定位
loss = criterion(model(x), labels)
loss.backward()
optimizer.step()
first, second = torch.chunk(x, 2)
print("均值 🧪", first.mean())
